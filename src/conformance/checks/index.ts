/** Every check, in the order they run: the preamble's check last, as it judges every error seen. */
import type { Check } from '../run-context.js';
import { cancelChecks } from './cancel.js';
import { deliveryChecks } from './delivery.js';
import { operatorChecks } from './operator.js';
import { contextChecks, continuationChecks } from './continuation.js';
import { generalChecks } from './general.js';
import { heartbeatChecks } from './heartbeat.js';
import { listChecks } from './list.js';
import { replayChecks } from './replay.js';
import { resumeChecks } from './resume.js';
import { streamChecks } from './stream.js';
import { submitChecks } from './submit.js';

export const ALL_CHECKS: readonly Check[] = [
  ...submitChecks,
  ...contextChecks,
  ...streamChecks,
  ...resumeChecks,
  ...heartbeatChecks,
  ...replayChecks,
  ...listChecks,
  ...cancelChecks,
  ...deliveryChecks,
  ...operatorChecks,
  ...continuationChecks,
  ...generalChecks,
];
