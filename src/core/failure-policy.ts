/**
 * The one failure classification of the client: what a retry loop (the turn follower's,
 * `recover()`'s list, the outbox's) does after a request failed. Pure: the transport reads
 * the answer's status, error body and `Retry-After`; this file decides.
 *
 * The rule (docs/protocol.md sections 1, 2 and 7):
 * - network errors, timeouts, `408`, `425`, `429` and every `5xx` are retried;
 * - `409` is retried for a submission only (its key is still in flight on the server);
 * - `401`/`403` on a read re-read the headers once (a refreshed token), then give up;
 *   a submission reads its headers afresh on every attempt anyway, so there they fail;
 * - `resume_point_ahead` on a read means the client's cursor is beyond the log: rebuild
 *   the turn from seq 0;
 * - everything else fails visibly: retrying changes nothing.
 */
import { ProtocolError, TransportError, type LifelineError, type LifelineErrorCode } from '../errors.js';

/**
 * What a retry loop does next: `retry` after backoff (honouring `retryAfterMs`); `auth`:
 * re-read headers and try once more, then give up; `rebuild`: replay the turn from seq 0;
 * `fatal`: give up now.
 */
export type FailureDisposition = 'retry' | 'auth' | 'rebuild' | 'fatal';

/**
 * Which kind of request failed: `submit` (a POST of the outbox, idempotent by its key) or
 * `read` (a stream, a replay page, a list, a cancel).
 */
export type RequestKind = 'submit' | 'read';

/** A classified failure. */
export interface Failure {
  error: LifelineError;
  disposition: FailureDisposition;
  /** The server's `Retry-After`, ms: the next attempt waits at least this long (capped by `maxRetryAfterMs`). */
  retryAfterMs?: number | undefined;
}

/** What the transport read of a non-success answer. */
export interface HttpFailureFacts {
  status: number;
  /** `error.code` of the protocol's error body, when it had one. */
  serverCode?: string | undefined;
  /** `Retry-After`, already parsed to ms. */
  retryAfterMs?: number | undefined;
}

/** Statuses with a code of their own; any other is `http_error` (and a refused submission `submission_rejected`). */
const STATUS_CODES: Readonly<Partial<Record<number, LifelineErrorCode>>> = {
  401: 'unauthorized',
  403: 'forbidden',
  404: 'turn_not_found',
  408: 'timeout',
  410: 'turn_expired',
  429: 'rate_limited',
  503: 'server_unavailable',
};

/** The rule itself: what an answer with `status` (and the server's code) leads to. Every status has exactly one disposition. */
export function dispositionOf(status: number, kind: RequestKind, serverCode?: string): FailureDisposition {
  if (status >= 500 || status === 408 || status === 425 || status === 429 || (status === 409 && kind === 'submit')) return 'retry';
  if (kind === 'read' && serverCode === 'resume_point_ahead') return 'rebuild';
  return kind === 'read' && (status === 401 || status === 403) ? 'auth' : 'fatal';
}

/** Classifies a non-success answer into its typed error and disposition. */
export function classifyHttpFailure(kind: RequestKind, { status, serverCode, retryAfterMs }: HttpFailureFacts): Failure {
  const disposition = dispositionOf(status, kind, serverCode);
  const options = { status, serverCode };
  if (disposition === 'rebuild') return { error: new ProtocolError('seq_mismatch', 'The server log is behind the client.', options), disposition };
  const code = kind === 'submit' && disposition === 'fatal' ? 'submission_rejected' : (STATUS_CODES[status] ?? 'http_error');
  return { error: new TransportError(code, `The server answered ${status}.`, options), disposition, retryAfterMs };
}

/**
 * A request that threw (refused, offline, timed out, a failing headers function): always
 * retried, since all of these may heal. A `TimeoutError`, or an `AbortError` the caller did
 * not cause (callers check their own abort first; some browsers report a timeout signal's
 * abort as `AbortError`), is a `timeout`; anything else a `network_error`.
 */
export function thrownFailure(cause: unknown): Failure {
  const name = (cause as { name?: unknown } | null | undefined)?.name;
  const code = name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'network_error';
  return { error: new TransportError(code, 'The request did not get through.', { cause }), disposition: 'retry' };
}

/** What a stream's or a list's retry loop ends in once `retry.maxElapsedMs` passed: the last failure is its cause. */
export function retryExhausted(cause: LifelineError): TransportError {
  return new TransportError('retry_exhausted', 'retry.maxElapsedMs passed.', { cause });
}

/** A failure the caller classified itself (an invalid answer, a protocol violation): retried unless said otherwise. */
export function failure(error: LifelineError, disposition: FailureDisposition = 'retry'): Failure {
  return { error, disposition };
}
