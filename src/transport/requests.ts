/**
 * Listing a conversation's turns (PROTOCOL.md section 4) for `recover()`, retried the way
 * every other request is: the failure's disposition decides (network, 5xx, 429 …), the
 * backoff times it (`Retry-After` honoured), each retry is announced, and the give-up
 * (`retry_exhausted`) comes only past `retry.maxElapsedMs`.
 */
import { createBackoff, type BackoffClock, type RetryPolicy } from '../core/backoff.js';
import { TransportError, type LifelineError } from '../errors.js';
import { listAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { requestJson, type JsonRequest } from './http.js';

/** How {@link listTurns} times, reports and waits between retries. */
export interface RetryLoop {
  policy: RetryPolicy;
  clock?: BackoffClock;
  /** Told before each wait: the retry's number, its delay and what failed. */
  onRetry: (attempt: number, delayMs: number, cause: LifelineError) => void;
  /** Waits `ms`; a rejection stops the loop with it (the client was disposed). */
  sleep: (ms: number) => Promise<void>;
}

/**
 * A conversation's turns, newest first (at most 200), with headers read again for each
 * attempt. Rejects with a failure retrying cannot fix, or `retry_exhausted`.
 */
export async function listTurns(
  context: Omit<JsonRequest, 'headers'> & { headers: () => Promise<Record<string, string>> },
  conversationId: string,
  retry: RetryLoop,
): Promise<TurnObject[]> {
  const backoff = createBackoff(retry.policy, retry.clock);
  for (;;) {
    // A list of 200 turn objects is ~60 KiB; ids match the protocol pattern, so they need no escaping.
    const answer = await requestJson(
      { ...context, headers: await context.headers() },
      'GET',
      `/conversations/${conversationId}/turns?limit=200`,
      listAnswerSchema,
      4 * 1024 * 1024,
      'list',
    );
    if (answer.ok) return answer.value.turns;
    const { failure } = answer;
    if (failure.disposition !== 'retry') throw failure.error;
    const delay = backoff.next(failure);
    if (delay === undefined) throw new TransportError('retry_exhausted', 'retry.maxElapsedMs passed.', { cause: failure.error });
    retry.onRetry(backoff.attempt, delay, failure.error);
    await retry.sleep(delay);
  }
}
