/**
 * A submission on the wire (docs/protocol.md section 1): the body checked before it is stored,
 * and one POST of an entry with its operation id as `Idempotency-Key`, with what came of
 * it: the server's answer, or a classified failure (core/failure-policy.ts) that says
 * whether another attempt with the same key may help.
 */
import { failure, thrownFailure, type Failure } from '../core/failure-policy.js';
import { LifelineError, ProtocolError } from '../errors.js';
import { assertId, jsonBytes, MAX_CONTEXT_BYTES, MAX_SUBMIT_BYTES, submitAnswerSchema, submitBodySchema, type MessageContent, type SubmitAnswer, type SubmitContext } from '../protocol/schemas.js';
import type { CheckedBody } from './entry-state.js';
import type { Timers } from '../ports/timers.js';
import { abortable } from '../runtime/abortable.js';
import { deadline } from '../runtime/deadline.js';
import type { OutboxRecord } from '../storage/store.js';
import { endpoint, failureFromResponse, type HttpContext } from '../transport/http.js';

/** What one attempt came to. `replayed`: the server had the key already (`Idempotent-Replayed`). */
export type SubmitResult = { ok: true; answer: SubmitAnswer; replayed: boolean } | { ok: false; failure: Failure };

/**
 * Posts `entry` once, within `timeoutMs`. Never rejects: an abort through `signal` (the
 * entry discarded, the outbox disposed) answers a failure the caller ignores.
 */
export async function submit(
  http: HttpContext,
  { operationId, conversationId, content, context }: OutboxRecord,
  signal: AbortSignal,
  timeoutMs: number,
  timers: Timers,
  extra: Record<string, string> = {},
): Promise<SubmitResult> {
  const limit = deadline(timers, timeoutMs, signal);
  const bounded = limit.signal;
  try {
    // The timeout covers the app's headers function too: a token refresh that never
    // answers must not hold the conversation's queue for ever.
    const headers = new Headers(await abortable(http.headers(), bounded));
    // This submission's own headers (section 1), over the client's.
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    // Set, not spread: an app's `Content-Type` would otherwise be sent beside ours.
    headers.set('content-type', 'application/json');
    headers.set('idempotency-key', operationId);
    const response = await http.fetch(endpoint(http.baseUrl, `/conversations/${conversationId}/messages`), {
      method: 'POST',
      headers,
      body: JSON.stringify(context ? { content, context } : { content }),
      signal: bounded,
    });
    if (!response.ok) return { ok: false, failure: await failureFromResponse(response, http.clock.wallNow(), 'submit') };
    const parsed = submitAnswerSchema.safeParse(await response.json().catch(() => undefined));
    if (parsed.success && parsed.data.conversationId === conversationId) {
      return { ok: true, answer: parsed.data, replayed: response.headers.get('idempotent-replayed') === 'true' };
    }
    // No protocol answer (a captive portal's page) may not come from Lifeline: retried. An
    // answer for another conversation would come back the same on every retry: failed.
    const error = new ProtocolError('invalid_response', 'Invalid submit answer.', { status: response.status });
    return { ok: false, failure: failure(error, parsed.success ? 'fatal' : 'retry') };
  } catch (cause) {
    // Refused, offline, timed out, a failing headers function: all may heal.
    return { ok: false, failure: thrownFailure(cause) };
  } finally {
    limit.clear();
  }
}

/**
 * The body to store for a new submission: a private copy (zod's output; the app may mutate
 * its objects after sending). Throws `invalid_argument` for a bad conversation id, content
 * that is not a string or JSON object, a `context` that is not a JSON object of at most
 * 16 KiB, or a body over 64 KiB encoded (the server's limits, docs/protocol.md section 1:
 * failing here costs no round trip and no stored entry).
 */
export function checkedBody(conversationId: string, content: MessageContent, context?: SubmitContext): CheckedBody {
  assertId('A conversation id', conversationId);
  const parsed = submitBodySchema.safeParse(context === undefined ? { content } : { content, context });
  if (parsed.success && parsed.data.context && jsonBytes(parsed.data.context) > MAX_CONTEXT_BYTES) {
    throw new LifelineError('invalid_argument', 'context must be a JSON object of at most 16 KiB.');
  }
  if (!parsed.success || jsonBytes(parsed.data) > MAX_SUBMIT_BYTES) {
    throw new LifelineError('invalid_argument', 'content must be a string or JSON object, context a JSON object, together at most 64 KiB.');
  }
  return parsed.data;
}
