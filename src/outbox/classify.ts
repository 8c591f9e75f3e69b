/**
 * Turns one submit attempt's answer (or failure) into what the outbox does next. Pure
 * apart from reading the response body, so the whole retry table is testable with
 * hand-made `Response` objects.
 */
import { ProtocolError, TransportError, type LifelineError, type LifelineErrorCode } from '../errors.js';
import { submitAnswerSchema, type SubmitAnswer } from '../protocol/schemas.js';
import { readServerError } from '../transport/http.js';
import { parseRetryAfter } from '../core/backoff.js';

/** What one attempt came to. */
export type AttemptOutcome =
  /** The server has the message: `202`, or `200` + `Idempotent-Replayed` for a key seen before. */
  | { readonly kind: 'accepted'; readonly answer: SubmitAnswer; readonly replayed: boolean }
  /** Worth another attempt with the same key; `retryAfterMs` when the server said how long to wait. */
  | { readonly kind: 'retry'; readonly error: LifelineError; readonly retryAfterMs?: number }
  /** Sending the same request again cannot succeed. */
  | { readonly kind: 'fail'; readonly error: LifelineError }
  /** Stopped by the outbox itself (disposed, entry discarded): no state change. */
  | { readonly kind: 'cancelled' };

/**
 * Statuses after which the very same request may succeed later: timeouts, the key still
 * in flight (`409`), too early, rate limits and every server error.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || (status >= 500 && status <= 599);
}

function retryCode(status: number): LifelineErrorCode {
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status === 503) return 'server_unavailable';
  return 'http_error';
}

type JsonRead = { ok: true; value: unknown } | { ok: false };

async function readJson(response: Response): Promise<JsonRead> {
  const text = await response.text();
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * Classifies a submit response. `2xx` must carry a valid answer for the expected
 * conversation; an unreadable `2xx` (a captive portal's HTML, say) is retried because the
 * request may never have reached the Lifeline server. Rejects only when reading a `2xx`
 * body fails (the network dropped mid-answer): pass that to {@link classifyThrown}.
 */
export async function classifyResponse(response: Response, conversationId: string, now: number): Promise<AttemptOutcome> {
  const { status } = response;
  if (status >= 200 && status <= 299) {
    const body = await readJson(response);
    const parsed = body.ok ? submitAnswerSchema.safeParse(body.value) : undefined;
    if (parsed === undefined || !parsed.success) {
      return {
        kind: 'retry',
        error: new ProtocolError('invalid_response', `The submit answer (${status}) is not a valid protocol answer.`, {
          status,
          ...(parsed === undefined ? {} : { details: parsed.error.issues }),
        }),
      };
    }
    if (parsed.data.conversationId !== conversationId) {
      // Asking again replays the same answer, so this cannot heal by retrying.
      return {
        kind: 'fail',
        error: new ProtocolError('invalid_response', 'The server accepted the message into another conversation.', {
          status,
          details: { expected: conversationId, got: parsed.data.conversationId },
        }),
      };
    }
    const replayed = response.headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true';
    return { kind: 'accepted', answer: parsed.data, replayed };
  }

  const serverError = await readServerError(response);
  const options = {
    status,
    ...(serverError === undefined ? {} : { serverCode: serverError.code, details: { message: serverError.message } }),
  };
  const label = serverError === undefined ? `${status}` : `${status} ${serverError.code}`;
  if (isRetryableStatus(status)) {
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), now);
    return {
      kind: 'retry',
      error: new TransportError(retryCode(status), `The server could not take the submission now (${label}).`, options),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  return {
    kind: 'fail',
    error: new TransportError('submission_rejected', `The server rejected the submission (${label}).`, options),
  };
}

/**
 * Classifies a thrown failure: fetch's `TypeError` (refused, reset, DNS, offline), a
 * timeout, a body cut mid-answer, a `headers` function that failed. All of them may heal,
 * so all are retried; `cancelled` is true when the outbox aborted the request itself.
 */
export function classifyThrown(error: unknown, cancelled: boolean): AttemptOutcome {
  if (cancelled) return { kind: 'cancelled' };
  const name = typeof error === 'object' && error !== null && 'name' in error ? String(error.name) : '';
  if (name === 'TimeoutError' || name === 'AbortError') {
    return { kind: 'retry', error: new TransportError('timeout', 'The submission timed out.', { cause: error }) };
  }
  return { kind: 'retry', error: new TransportError('network_error', 'The submission did not reach the server.', { cause: error }) };
}
