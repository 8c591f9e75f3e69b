/**
 * The follower's requests, one per effect of its machine: a stream attempt, a replay page,
 * the integrity check. Each runs under the effect runner's slot, and its result comes back
 * to the machine as an input only while that request is still the slot's current one.
 */
import type { FollowInput, RequestSlot } from '../core/follow-types.js';
import { turnText } from '../core/turn-reducer.js';
import { decodeEvent, DEFAULT_MAX_EVENT_SIZE } from '../protocol/decode.js';
import { streamLimitsFor } from '../transport/sse-connection.js';
import type { TurnShare } from '../tabs/turn-share.js';
import type { EffectRunner } from './effect-runner.js';
import type { TurnIntake } from './intake.js';
import { verifyText } from './integrity.js';
import { fetchReplayPage } from './replay-page.js';
import { runStreamAttempt } from './sse-attempt.js';
import type { FollowerDeps } from './types.js';

/** What the requests need from their follower. */
export interface RequestHost {
  readonly id: string;
  readonly path: string;
  readonly deps: FollowerDeps;
  readonly runner: EffectRunner;
  readonly intake: TurnIntake;
  share(): TurnShare | undefined;
  dispatch(input: FollowInput): void;
  /** Stamps the time the request in flight last made a sound (the stall watchdog reads it). */
  heard(): void;
  /** The stream attempt of `signal` was made deaf by a `stall` drill: what it sends is ignored. */
  deaf(signal: AbortSignal): boolean;
  /** Runs `apply` (the hot path); a throw there is a bug: the turn ends failed (follower.ts `#crash`). */
  guarded<T>(apply: () => T): T | undefined;
}

/** One stream attempt from the last applied seq (the only cursor trusted). */
export function openStream(host: RequestHost, attempt: number): void {
  const { deps, intake, runner, id } = host;
  const controller = runner.begin('main');
  const lastEventId = intake.turn.lastSeq;
  intake.beginAttempt();
  const { limits } = deps;
  deps.emit({ type: 'connect', at: deps.clock.wallNow(), turnId: id, attempt, lastEventId });
  void runStreamAttempt({
    ...deps,
    path: host.path,
    lastEventId,
    limits: streamLimitsFor(limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE),
    signal: controller.signal,
    onOpen: (heartbeatMs) => host.dispatch({ kind: 'opened', lastEventId, heartbeatMs }),
    onMessage: (data) => {
      if (host.deaf(controller.signal)) return;
      host.heard();
      // Heartbeats are relayed too: they keep the watching tabs' watchdogs quiet.
      if (data === undefined) return host.share()?.relay();
      return host.guarded(() => intake.take(decodeEvent(data, limits, id), 'stream', data));
    },
  }).then((end) => {
    if (!runner.current('main', controller)) return;
    if (end.kind === 'no-content') host.dispatch({ kind: 'no-content' });
    else if (end.kind === 'failed') host.dispatch({ kind: 'failed', slot: 'main', failure: end.failure, closed: end.closed });
  });
}

/** One page of the log after the last applied seq, for the main loop or `recover()`. */
export function fetchPage(host: RequestHost, slot: RequestSlot): void {
  const { deps, intake, runner } = host;
  const controller = runner.begin(slot);
  if (slot === 'main') intake.beginAttempt();
  void fetchReplayPage({
    ...deps,
    signal: controller.signal,
    path: host.path,
    turnId: host.id,
    lastSeq: () => intake.turn.lastSeq,
    maxEventSize: deps.limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE,
    take: (decoded) => host.guarded(() => intake.take(decoded, 'replay')),
    ended: () => intake.turn.phase === 'ended',
  }).then((result) => {
    if (!runner.current(slot, controller)) return;
    host.dispatch('more' in result ? { kind: 'page', slot, ...result } : { kind: 'failed', slot, failure: result });
  });
}

/** Checks the ended turn's text against `turn.end` (length, then SHA-256). */
export function verifyTurn(host: RequestHost): void {
  const { deps, intake } = host;
  const end = intake.turn.end!;
  const text = turnText(intake.turn);
  void verifyText(text, end).then(({ matches, unchecked }) => {
    if (unchecked) deps.emit({ type: 'integrity-unchecked', at: deps.clock.wallNow(), turnId: host.id });
    host.dispatch({ kind: 'verified', matches, status: end.status, expectedLength: end.textLength, actualLength: text.length });
  });
}
