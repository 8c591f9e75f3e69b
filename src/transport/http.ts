/**
 * Shared HTTP plumbing of the client's requests: URLs, fresh headers, bounded JSON bodies,
 * and reading a non-success answer into the facts core/failure-policy.ts classifies.
 */
import type * as z from 'zod/mini';
import { parseRetryAfter } from '../core/backoff.js';
import { classifyHttpFailure, failure, thrownFailure, type Failure, type RequestKind } from '../core/failure-policy.js';
import { ProtocolError } from '../errors.js';
import { errorBodySchema } from '../protocol/schemas.js';
import type { Clock } from '../ports/clock.js';
import type { HeadersInput } from '../types.js';

/** Everything a request needs from the client. */
export interface HttpContext {
  baseUrl: string;
  fetch: typeof fetch;
  /** Called before every request so a refreshed token is always used. */
  headers: () => Promise<Record<string, string>>;
  /** Wall time reads `Retry-After` dates; monotonic time paces retries. */
  clock: Clock;
}

/** Joins the base and a path of already-encoded segments. */
export function endpoint(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

/** Resolves {@link HeadersInput} into a fresh plain object (never cached: tokens refresh). */
export function headersResolver(input: HeadersInput | undefined): () => Promise<Record<string, string>> {
  return async () => ({ ...(typeof input === 'function' ? await input() : input) });
}

/** What a JSON request needs: the client's plumbing (the headers are read afresh for it). */
export interface JsonRequest extends HttpContext {
  signal?: AbortSignal;
}

/** A JSON answer valid for its schema, or why there is none (`tooLarge`: the body passed the cap). */
export type JsonAnswer<T> = { ok: true; value: T } | { ok: false; failure: Failure; tooLarge?: true };

/** Answer of {@link readJson} for a body past its cap. */
const TOO_LARGE = Symbol();

/**
 * A body's JSON value (`undefined` when it is not JSON), read up to `maxBytes`: past them
 * the stream is cancelled and the answer is {@link TOO_LARGE}, so memory stays bounded
 * whatever the server sends. Rejects when the stream breaks.
 */
async function readJson(response: Response, maxBytes: number): Promise<unknown> {
  // Not even read unless it says JSON: another body (an HTML error page, a stream) could be endless.
  if (!/json/i.test(response.headers.get('content-type') ?? '')) return void (await response.body?.cancel().catch(() => {}));
  const reader = response.body?.getReader();
  if (!reader) return;
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  for (let chunk; !(chunk = await reader.read()).done; ) {
    if ((size += chunk.value.byteLength) > maxBytes) {
      await reader.cancel().catch(() => {});
      return TOO_LARGE;
    }
    text += decoder.decode(chunk.value, { stream: true });
  }
  try {
    return JSON.parse(text + decoder.decode());
  } catch {
    return;
  }
}

/**
 * One request to a JSON endpoint (replay, list, cancel); never throws, an abort answers a
 * `network_error` failure. Success is `200`/`202` with a JSON body of at most `maxBytes`
 * that `schema` accepts; anything else there is a retryable `invalid_response` (the zod
 * issues in its `details`; the diagnostic's scope says which request).
 */
export async function requestJson<T>(
  request: JsonRequest,
  method: 'GET' | 'POST',
  path: string,
  schema: z.ZodMiniType<T>,
  maxBytes: number,
): Promise<JsonAnswer<T>> {
  let value: unknown;
  try {
    const response = await request.fetch(endpoint(request.baseUrl, path), {
      method,
      headers: { ...(await request.headers()), accept: 'application/json' },
      signal: request.signal ?? null,
    });
    if (response.status !== 200 && response.status !== 202) return { ok: false, failure: await failureFromResponse(response, request.clock.wallNow()) };
    value = await readJson(response, maxBytes);
  } catch (cause) {
    return { ok: false, failure: thrownFailure(cause) };
  }
  const parsed = schema.safeParse(value);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : {
        ok: false,
        failure: failure(new ProtocolError('invalid_response', 'Invalid answer.', { details: parsed.error.issues })),
        ...(value === TOO_LARGE && { tooLarge: true }),
      };
}

/**
 * Classifies a non-success answer to a request of `kind` (see core/failure-policy.ts);
 * reads (a bounded part of) its error body and its `Retry-After`.
 */
export async function failureFromResponse(response: Response, wallNow: number, kind: RequestKind = 'read'): Promise<Failure> {
  return classifyHttpFailure(kind, {
    status: response.status,
    serverCode: (await readServerError(response))?.code,
    retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), wallNow),
  });
}

/**
 * The `{"error":{code,message}}` body of an error answer, when it has one (JSON, at most
 * 16 KiB). Never throws: the status alone decides what happens next.
 */
export async function readServerError(response: Response): Promise<{ code: string; message: string } | undefined> {
  return errorBodySchema.safeParse(await readJson(response, 16 * 1024).catch(() => {})).data?.error;
}
