/**
 * Listing a conversation's turns (docs/protocol.md section 4) for `recover()`, retried the way
 * every other request is: the failure's disposition decides (network, 5xx, 429 …), the
 * backoff times it (`Retry-After` honoured), each retry is announced, and the give-up
 * (`retry_exhausted`) comes only past `retry.maxElapsedMs`.
 */
import { backoffStep, FRESH_BACKOFF, type RetryPolicy } from '../core/backoff.js';
import { retryExhausted } from '../core/failure-policy.js';
import { listAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { deadline } from '../runtime/deadline.js';
import { sleep } from '../runtime/sleep.js';
import type { Timers } from '../ports/timers.js';
import type { Diagnostic } from '../types.js';
import { requestJson, type JsonRequest } from './http.js';

/** What {@link listTurns} needs from the client (its follower deps fit). */
export interface ListContext extends JsonRequest {
  random: () => number;
  timers: Timers;
  /** One attempt's time limit, ms: past it the attempt is a `timeout`, retried like any. */
  requestTimeoutMs: number;
  retry: RetryPolicy;
  emit: (diagnostic: Diagnostic) => void;
}

/**
 * A conversation's turns, newest first (at most 200), with headers read again for each
 * attempt. Rejects with a failure retrying cannot fix, `retry_exhausted`, or the reason
 * `signal` aborted with (the client was disposed) as soon as it does.
 */
export async function listTurns(context: ListContext, conversationId: string, signal: AbortSignal): Promise<TurnObject[]> {
  let backoff = FRESH_BACKOFF;
  for (;;) {
    // A list of 200 turn objects is ~60 KiB; ids match the protocol pattern, so they need no escaping.
    // Each attempt is bounded (a server that accepts and never answers) and ends with the client.
    const limit = deadline(context.timers, context.requestTimeoutMs, signal);
    const answer = await requestJson({ ...context, signal: limit.signal }, 'GET', `/conversations/${conversationId}/turns?limit=200`, listAnswerSchema, 4 * 1024 * 1024);
    limit.clear();
    if (signal.aborted) throw signal.reason;
    if (answer.ok) return answer.value.turns;
    const { error, disposition } = answer.failure;
    if (disposition !== 'retry') throw error;
    const { state, delay } = backoffStep(context.retry, backoff, answer.failure, context.clock.now(), context.random());
    backoff = state;
    if (delay === undefined) throw retryExhausted(error);
    context.emit({ type: 'retry', at: context.clock.wallNow(), scope: 'replay', id: conversationId, attempt: backoff.attempt, delayMs: delay, cause: error });
    if (!(await sleep(delay, signal, context.timers))) throw signal.reason;
  }
}
