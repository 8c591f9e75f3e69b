/**
 * Turns one submit attempt (its response, or what it threw) into what the outbox does
 * next. Pure apart from reading the response body, so the whole retry table is testable
 * with hand-made `Response` objects.
 */
import { parseRetryAfter } from '../core/backoff.js';
import { ProtocolError, TransportError, type LifelineError, type LifelineErrorCode } from '../errors.js';
import { submitAnswerSchema, type SubmitAnswer } from '../protocol/schemas.js';
import { readServerError } from '../transport/http.js';

/**
 * What one attempt came to: the server has the message (`202`, or `200` +
 * `Idempotent-Replayed` for a key seen before), or an error that is worth another attempt
 * with the same key (`retry`, after at least `retryAfterMs` when the server said so) or not.
 */
export type AttemptOutcome =
  | { readonly answer: SubmitAnswer; readonly replayed: boolean }
  | { readonly error: LifelineError; readonly retry: boolean; readonly retryAfterMs?: number | undefined };

/** Statuses after which the very same request may succeed later: 408, 409 (key still in flight), 425, 429, 5xx. */
export function isRetryableStatus(status: number): boolean {
  return [408, 409, 425, 429].includes(status) || (status > 499 && status < 600);
}

/** Retryable statuses with a code of their own; the others are `http_error`. */
const CODES: Partial<Record<number, LifelineErrorCode>> = { 408: 'timeout', 429: 'rate_limited', 503: 'server_unavailable' };

/**
 * Classifies a submit attempt; never rejects. Whatever it threw (fetch's `TypeError` when
 * refused or offline, a timeout, a failing `headers` function) may heal: retried. A `2xx`
 * must carry a valid answer for `conversationId`.
 */
export async function classify(attempt: Promise<Response>, conversationId: string, now: number): Promise<AttemptOutcome> {
  let response: Response;
  try {
    response = await attempt;
  } catch (cause) {
    const timeout = ['TimeoutError', 'AbortError'].includes((cause as Error | undefined)?.name ?? '');
    return { error: new TransportError(timeout ? 'timeout' : 'network_error', 'The submission did not get through.', { cause }), retry: true };
  }
  const { status, headers } = response;
  if (response.ok) {
    const parsed = submitAnswerSchema.safeParse(await response.json().catch(() => undefined));
    if (parsed.success && parsed.data.conversationId === conversationId) {
      return { answer: parsed.data, replayed: headers.get('idempotent-replayed') === 'true' };
    }
    // No protocol answer (a captive portal's page) may not come from Lifeline: retried. An
    // answer for another conversation would come back the same on every retry: failed.
    return { error: new ProtocolError('invalid_response', 'Invalid submit answer.', { status }), retry: !parsed.success };
  }
  const server = await readServerError(response);
  const retry = isRetryableStatus(status);
  return {
    error: new TransportError(retry ? (CODES[status] ?? 'http_error') : 'submission_rejected', `Submit answered ${status}.`, {
      status,
      ...(server && { serverCode: server.code }),
    }),
    retry,
    retryAfterMs: parseRetryAfter(headers.get('retry-after'), now),
  };
}
