/** The immutable views of a followed turn: the app's snapshot and the storage row's description. */
import { isEnded } from '../core/domain.js';
import { connectionOf, retryAtOf, statusOf } from '../core/follow-state.js';
import type { FollowState } from '../core/follow-types.js';
import { turnText, type TurnState } from '../core/turn-reducer.js';
import { turnParts } from '../core/turn-read.js';
import type { TurnMeta } from '../storage/persistence.js';
import type { ConnectionInfo, EndedTurnSnapshot, RecoveryInfo, StallInfo, TurnSnapshot } from '../types.js';
import type { TurnOrigin } from './types.js';

/** `value` frozen, without its undefined members (optional fields are absent, never undefined). */
function frozen<T>(value: { [K in keyof T]: T[K] | undefined }): T {
  for (const key in value) if (value[key] === undefined) delete value[key];
  return Object.freeze(value) as T;
}

/** The snapshot the app reads: a pure function of the applied events and the machine's state. */
export function buildSnapshot(
  id: string,
  turn: TurnState,
  machine: FollowState,
  origin: TurnOrigin,
  recovered: RecoveryInfo | undefined,
  stall: StallInfo | undefined,
  /** Wall minus monotonic ms: the machine schedules on monotonic time, the snapshot shows epoch ms. */
  wallOffset: number,
): TurnSnapshot {
  const nextRetryAt = retryAtOf(machine);
  return frozen<TurnSnapshot>({
    id,
    conversationId: turn.conversationId ?? origin.conversationId,
    messageId: turn.messageId ?? origin.messageId,
    status: statusOf(machine),
    text: turnText(turn),
    parts: turnParts(turn),
    actions: turn.actions,
    lastSeq: turn.lastSeq,
    error: machine.phase === 'done' ? machine.error : undefined,
    endError: turn.end?.error,
    connection: frozen<ConnectionInfo>({ state: connectionOf(machine), attempt: machine.backoff.attempt, nextRetryAt: nextRetryAt === undefined ? undefined : Math.round(nextRetryAt + wallOffset) }),
    recovered,
    stall,
  });
}

/** The turn's storage row, or `undefined` until the conversation is known (turn.start or acceptance). */
export function describeTurn(turn: TurnState, origin: TurnOrigin, status: TurnMeta['status'], createdAt: number): TurnMeta | undefined {
  const conversationId = turn.conversationId ?? origin.conversationId;
  return conversationId === undefined
    ? undefined
    : frozen<TurnMeta>({ conversationId, messageId: turn.messageId ?? origin.messageId, operationId: origin.operationId, status, createdAt });
}

/** The turn reached an end status (the machine settles only in `done`, so always at `settle`). */
export function isEndedSnapshot(snapshot: TurnSnapshot): snapshot is EndedTurnSnapshot {
  return isEnded(snapshot.status);
}

/** The machine's fields the snapshot shows changed. */
export function visiblyChanged(before: FollowState, after: FollowState): boolean {
  return (
    statusOf(before) !== statusOf(after) ||
    connectionOf(before) !== connectionOf(after) ||
    retryAtOf(before) !== retryAtOf(after) ||
    before.backoff.attempt !== after.backoff.attempt ||
    (before.phase === 'done' && before.error) !== (after.phase === 'done' && after.error)
  );
}
