/**
 * Shared HTTP plumbing of the client's requests: URLs, fresh headers, and turning a
 * non-success answer into a typed error with what the retry loops need to decide.
 */
import type * as z from 'zod/mini';
import { ProtocolError, TransportError, type LifelineError, type LifelineErrorCode } from '../errors.js';
import { parseRetryAfter } from '../core/backoff.js';
import { errorBodySchema } from '../protocol/schemas.js';
import type { HeadersInput } from '../types.js';

/** Everything a request needs from the client. */
export interface HttpContext {
  baseUrl: string;
  fetch: typeof fetch;
  /** Called before every request so a refreshed token is always used. */
  headers: () => Promise<Record<string, string>>;
  now: () => number;
}

/** Joins the base and a path of already-encoded segments. */
export function endpoint(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

/** Resolves {@link HeadersInput} into a fresh plain object (never cached: tokens refresh). */
export function headersResolver(input: HeadersInput | undefined): () => Promise<Record<string, string>> {
  if (input === undefined) return () => Promise.resolve({});
  if (typeof input === 'function') return async () => ({ ...(await input()) });
  return () => Promise.resolve({ ...input });
}

/** What a retry loop should do after a failure. */
export type FailureDisposition =
  /** Try again after backoff (network, 5xx, 408, 425, 429, 503, wrong content type). */
  | 'retry'
  /** 401/403: re-read headers once, then give up. */
  | 'auth'
  /** The client's cursor is beyond the log (`resume_point_ahead`): rebuild from seq 0. */
  | 'rebuild'
  /** Nothing will change by retrying (404, 410, other 4xx, bad data). */
  | 'fatal';

/** A classified failure. */
export interface Failure {
  error: LifelineError;
  disposition: FailureDisposition;
  retryAfterMs?: number;
}

/** What a JSON request needs: the client's plumbing with the headers already resolved. */
export interface JsonRequest {
  baseUrl: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  now: () => number;
  signal?: AbortSignal;
}

/** A JSON answer valid for its schema, or why there is none (`tooLarge`: the body passed the cap). */
export type JsonAnswer<T> = { ok: true; value: T } | { ok: false; failure: Failure; tooLarge?: true };

/**
 * One request to a JSON endpoint (replay, list, cancel); never throws, an abort answers a
 * `network_error` failure. Success is `200`/`202` with an `application/json` body of at
 * most `maxBytes` that `schema` accepts; bad answers are retryable protocol failures
 * (`what` names the answer in their messages).
 */
export async function requestJson<T>(
  request: JsonRequest,
  method: 'GET' | 'POST',
  path: string,
  schema: z.ZodMiniType<T>,
  maxBytes: number,
  what: string,
): Promise<JsonAnswer<T>> {
  const retry = (error: LifelineError): { ok: false; failure: Failure } => ({ ok: false, failure: { error, disposition: 'retry' } });
  let response: Response;
  try {
    response = await request.fetch(endpoint(request.baseUrl, path), {
      method,
      headers: { ...request.headers, accept: 'application/json' },
      ...(request.signal ? { signal: request.signal } : {}),
    });
  } catch (cause) {
    return { ok: false, failure: networkFailure(cause) };
  }
  const { status } = response;
  if (status !== 200 && status !== 202) return { ok: false, failure: await failureFromResponse(response, request.now()) };
  const type = response.headers.get('content-type') ?? '';
  if (!type.toLowerCase().includes('application/json')) {
    await response.body?.cancel().catch(() => undefined);
    return retry(new TransportError('unexpected_content_type', `Expected application/json, got ${type || '(none)'}.`, { status }));
  }
  let text: string | undefined;
  try {
    text = await readTextCapped(response, maxBytes);
  } catch (cause) {
    return { ok: false, failure: networkFailure(cause) };
  }
  if (text === undefined) return { ...retry(new ProtocolError('invalid_response', `The ${what} answer is over ${maxBytes} bytes.`)), tooLarge: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return retry(new ProtocolError('invalid_response', `The ${what} answer is not JSON.`, { cause }));
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return retry(new ProtocolError('invalid_response', `The ${what} answer does not match the protocol.`, { details: parsed.error.issues }));
}

/** Largest error body read; anything past it is ignored (error bodies are tiny). */
const MAX_ERROR_BODY = 16 * 1024;

/** Statuses with a meaning of their own: code, message, what to do. */
const STATUS_FAILURES: Readonly<Record<number, readonly [LifelineErrorCode, string, FailureDisposition]>> = {
  401: ['unauthorized', 'The server answered 401 Unauthorized.', 'auth'],
  403: ['forbidden', 'The server answered 403 Forbidden.', 'auth'],
  404: ['turn_not_found', 'The server does not know this turn (404).', 'fatal'],
  410: ['turn_expired', "The turn's log has expired (410).", 'fatal'],
  429: ['rate_limited', 'The server is rate limiting (429).', 'retry'],
  503: ['server_unavailable', 'The server is unavailable (503).', 'retry'],
};

/** Classifies a non-success response; reads (a bounded part of) its error body. */
export async function failureFromResponse(response: Response, now: number): Promise<Failure> {
  const status = response.status;
  const serverCode = (await readServerError(response))?.code;
  const options = { status, ...(serverCode === undefined ? {} : { serverCode }) };
  const known = STATUS_FAILURES[status];
  let failure: Failure;
  if (known !== undefined) failure = { error: new TransportError(known[0], known[1], options), disposition: known[2] };
  else if (status === 400 && serverCode === 'resume_point_ahead') {
    failure = { error: new ProtocolError('seq_mismatch', 'The server log is behind the client (resume_point_ahead).', options), disposition: 'rebuild' };
  } else {
    const retryable = status >= 500 || status === 408 || status === 425;
    failure = { error: new TransportError('http_error', `The server answered ${status}.`, options), disposition: retryable ? 'retry' : 'fatal' };
  }
  // Retry-After only matters to an answer that is retried.
  const retryAfterMs = failure.disposition === 'retry' ? parseRetryAfter(response.headers.get('retry-after'), now) : undefined;
  return retryAfterMs === undefined ? failure : { ...failure, retryAfterMs };
}

/**
 * The `{"error":{code,message}}` body of an error answer, when it has one: read only when
 * it says JSON, and only up to 16 KiB. Never throws: the status alone decides what happens
 * next, a body cut short changes nothing.
 */
export async function readServerError(response: Response): Promise<{ code: string; message: string } | undefined> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json') || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  try {
    const text = await readTextCapped(response, MAX_ERROR_BODY);
    if (text === undefined) return undefined;
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.error : undefined;
  } catch {
    return undefined;
  }
}

/** A network-level failure (fetch rejected, body stream broke) as a retryable failure. */
export function networkFailure(cause: unknown): Failure {
  return { error: new TransportError('network_error', describe(cause), { cause }), disposition: 'retry' };
}

function describe(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  return `The network request failed: ${message}`;
}

/**
 * Reads a body as UTF-8 text, giving up (and cancelling the stream) past `maxBytes`:
 * `undefined` then. Keeps memory bounded whatever the server sends.
 */
export async function readTextCapped(response: Response, maxBytes: number): Promise<string | undefined> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    parts.push(decoder.decode(value, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join('');
}
