/**
 * Retries a one-shot JSON request (the conversation list of `recover()`) the way every
 * other request is retried: the failure's disposition decides (network, 5xx, 429 …),
 * core/backoff times it (capped exponential with jitter, `Retry-After` honoured), each
 * retry is announced, and the give-up (`retry_exhausted`) comes only past
 * `retry.maxElapsedMs`.
 */
import { createBackoff, type BackoffClock, type RetryPolicy } from '../core/backoff.js';
import { TransportError, type LifelineError } from '../errors.js';
import type { JsonAnswer } from './http.js';

/** How {@link withRetry} times, reports and waits. */
export interface RetryLoop {
  policy: RetryPolicy;
  clock?: BackoffClock;
  /** Told before each wait: the retry's number, its delay and what failed. */
  onRetry: (attempt: number, delayMs: number, cause: LifelineError) => void;
  /** Waits `ms`; a rejection stops the loop with it (the client was disposed). */
  sleep: (ms: number) => Promise<void>;
}

/** Runs `attempt` until it answers; rejects with a failure that retrying cannot fix, or with `retry_exhausted`. */
export async function withRetry<T>(loop: RetryLoop, attempt: () => Promise<JsonAnswer<T>>): Promise<T> {
  const backoff = createBackoff(loop.policy, loop.clock);
  for (;;) {
    const answer = await attempt();
    if (answer.ok) return answer.value;
    const { failure } = answer;
    if (failure.disposition !== 'retry') throw failure.error;
    const delay = backoff.next(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs });
    if (delay === undefined) throw new TransportError('retry_exhausted', 'Retrying took longer than retry.maxElapsedMs.', { cause: failure.error });
    loop.onRetry(backoff.attempt, delay, failure.error);
    await loop.sleep(delay);
  }
}
