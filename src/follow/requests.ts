/**
 * The follower's requests, one per effect of its machine: a stream attempt, a replay page,
 * the integrity check, and `turn.cancel()`. Each runs under the effect runner's slot and
 * answers the input its end means for the machine, or `undefined` once it is no longer its
 * slot's current request (a stale answer changes nothing). What a request brings along the
 * way (the stream opening, each event) goes to the follower's sinks; the follower alone
 * dispatches, stores, shows and relays.
 */
import type { Source } from '../core/event-placement.js';
import type { Failure } from '../core/failure-policy.js';
import type { FollowInput, RequestSlot } from '../core/follow-types.js';
import { turnText, type TurnState } from '../core/turn-reducer.js';
import { DEFAULT_MAX_EVENT_SIZE, type DecodeResult } from '../protocol/decode.js';
import { cancelAnswerSchema } from '../protocol/schemas.js';
import { deadline } from '../runtime/deadline.js';
import { requestJson } from '../transport/http.js';
import { streamLimitsFor } from '../transport/sse-connection.js';
import type { EffectRunner } from './effect-runner.js';
import { verifyText } from './integrity.js';
import { fetchReplayPage } from './replay-page.js';
import { runStreamAttempt } from './sse-attempt.js';
import type { FollowerDeps } from './types.js';

/** What the requests read of their follower, and where what they bring goes. */
export interface RequestHost {
  readonly id: string;
  readonly path: string;
  readonly deps: FollowerDeps;
  readonly runner: EffectRunner;
  /** The turn so far (the cursor every request starts from). */
  turn(): TurnState;
  /** A new attempt of the main loop starts (its first event is progress again). */
  beginAttempt(): void;
  /** The stream answered 200. */
  opened(input: Extract<FollowInput, { kind: 'opened' }>): void;
  /** One SSE message of the stream of `signal` (`undefined`: a heartbeat). */
  message(signal: AbortSignal, data: string | undefined): Failure | void;
  /** One decoded event; answers why the path that brought it must stop, if it must. */
  take(decoded: DecodeResult, from: Source): Failure | void;
}

/** One stream attempt from the last applied seq (the only cursor trusted). */
export async function openStream(host: RequestHost, attempt: number): Promise<FollowInput | undefined> {
  const { deps, runner, id } = host;
  const controller = runner.begin('main');
  const { signal } = controller;
  const lastEventId = host.turn().lastSeq;
  host.beginAttempt();
  deps.emit({ type: 'connect', at: deps.clock.wallNow(), turnId: id, attempt, lastEventId });
  const end = await runStreamAttempt({
    ...deps,
    path: host.path,
    lastEventId,
    limits: streamLimitsFor(deps.limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE),
    signal,
    onOpen: (heartbeatMs) => host.opened({ kind: 'opened', lastEventId, heartbeatMs }),
    onMessage: (data) => host.message(signal, data),
  });
  if (!runner.current('main', controller)) return undefined;
  if (end.kind === 'no-content') return { kind: 'no-content' };
  if (end.kind === 'failed') return { kind: 'failed', slot: 'main', failure: end.failure, closed: end.closed };
  return undefined;
}

/** One page of the log after the last applied seq, for the main loop or `recover()`. */
export async function fetchPage(host: RequestHost, slot: RequestSlot): Promise<FollowInput | undefined> {
  const { deps, runner } = host;
  const controller = runner.begin(slot);
  if (slot === 'main') host.beginAttempt();
  const result = await fetchReplayPage({
    ...deps,
    signal: controller.signal,
    path: host.path,
    turnId: host.id,
    lastSeq: () => host.turn().lastSeq,
    maxEventSize: deps.limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE,
    take: (decoded) => host.take(decoded, 'replay'),
    ended: () => host.turn().phase === 'ended',
  });
  if (!runner.current(slot, controller)) return undefined;
  return 'more' in result ? { kind: 'page', slot, ...result } : { kind: 'failed', slot, failure: result };
}

/** Checks the ended turn's text against `turn.end` (length, then SHA-256). */
export async function verifyTurn(host: RequestHost): Promise<FollowInput> {
  const { deps } = host;
  const turn = host.turn();
  const end = turn.end!;
  const text = turnText(turn);
  const { matches, unchecked } = await verifyText(text, end);
  if (unchecked) deps.emit({ type: 'integrity-unchecked', at: deps.clock.wallNow(), turnId: host.id });
  return { kind: 'verified', matches, status: end.status, expectedLength: end.textLength, actualLength: text.length };
}

/** `turn.cancel()`: one request, bounded by `requestTimeoutMs`; rejects `disposed` as soon as the client is. */
export async function cancelTurn(deps: FollowerDeps, path: string): Promise<void> {
  const { signal, timers, requestTimeoutMs } = deps;
  signal.throwIfAborted();
  const limit = deadline(timers, requestTimeoutMs, signal);
  const answer = await requestJson({ ...deps, signal: limit.signal }, 'POST', path + '/cancel', cancelAnswerSchema, 100_000);
  limit.clear();
  signal.throwIfAborted();
  if (!answer.ok) throw answer.failure.error;
}
