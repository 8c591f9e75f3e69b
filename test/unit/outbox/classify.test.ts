import { describe, expect, it } from 'vitest';
import { isProtocolError, isTransportError, type LifelineError } from '../../../src/errors.js';
import { classify, isRetryableStatus, type AttemptOutcome } from '../../../src/outbox/classify.js';
import type { SubmitAnswer } from '../../../src/protocol/schemas.js';

/** An outcome with its decision spelled out: accepted, retry or fail. */
type Decision =
  | { kind: 'accepted'; answer: SubmitAnswer; replayed: boolean }
  | { kind: 'retry' | 'fail'; error: LifelineError; retryAfterMs?: number | undefined };

const decide = (outcome: AttemptOutcome): Decision =>
  'answer' in outcome ? { kind: 'accepted', ...outcome } : { kind: outcome.retry ? 'retry' : 'fail', error: outcome.error, retryAfterMs: outcome.retryAfterMs };
/** The attempt got `response`. */
const classifyResponse = async (response: Response, conversationId: string, now: number): Promise<Decision> =>
  decide(await classify(Promise.resolve(response), conversationId, now));
/** The attempt threw `error`. */
const classifyThrown = async (error: unknown): Promise<Decision> => decide(await classify(Promise.reject(error), 'conv', NOW));

const answer = { turnId: 'turn_1', messageId: 'msg_1', conversationId: 'conv', status: 'pending' };
const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

function errorResponse(status: number, headers: Record<string, string> = {}, code = 'some_code'): Response {
  return Response.json({ error: { code, message: 'nope' } }, { status, headers });
}

describe('retry classification', () => {
  it.each([408, 409, 425, 429, 500, 501, 502, 503, 504, 599])('%i is retried with the server code kept', async (status) => {
    const outcome = await classifyResponse(errorResponse(status), 'conv', NOW);
    expect(outcome.kind).toBe('retry');
    if (outcome.kind !== 'retry') return;
    expect(isTransportError(outcome.error)).toBe(true);
    expect(outcome.error.status).toBe(status);
    expect(outcome.error.serverCode).toBe('some_code');
    expect(outcome.retryAfterMs).toBeUndefined();
  });

  it.each([
    [408, 'timeout'],
    [429, 'rate_limited'],
    [503, 'server_unavailable'],
    [500, 'http_error'],
    [409, 'http_error'],
  ])('%i maps to code %s', async (status, code) => {
    const outcome = await classifyResponse(errorResponse(status), 'conv', NOW);
    expect(outcome.kind === 'retry' && outcome.error.code).toBe(code);
  });

  it.each([400, 401, 403, 404, 405, 410, 413, 415, 422, 451])('%i fails at once as submission_rejected', async (status) => {
    const outcome = await classifyResponse(errorResponse(status, {}, 'idempotency_key_reused'), 'conv', NOW);
    expect(outcome.kind).toBe('fail');
    if (outcome.kind !== 'fail') return;
    expect(outcome.error.code).toBe('submission_rejected');
    expect(outcome.error.status).toBe(status);
    expect(outcome.error.serverCode).toBe('idempotency_key_reused');
  });

  it('a 4xx without a protocol error body still fails, with no server code', async () => {
    const outcome = await classifyResponse(new Response('<html>bad</html>', { status: 400 }), 'conv', NOW);
    expect(outcome.kind === 'fail' && outcome.error.serverCode).toBeUndefined();
    expect(outcome.kind).toBe('fail');
  });

  it('the retryable set is exactly 408, 409, 425, 429 and 5xx', () => {
    const retryable = [];
    for (let status = 100; status < 700; status++) if (isRetryableStatus(status)) retryable.push(status);
    expect(retryable).toEqual([408, 409, 425, 429, ...Array.from({ length: 100 }, (_, i) => 500 + i)]);
  });

  it('202 is accepted, not replayed', async () => {
    const outcome = await classifyResponse(Response.json(answer, { status: 202 }), 'conv', NOW);
    expect(outcome).toEqual({ kind: 'accepted', answer, replayed: false });
  });

  it('200 with Idempotent-Replayed is accepted and replayed', async () => {
    const outcome = await classifyResponse(Response.json(answer, { status: 200, headers: { 'Idempotent-Replayed': 'true' } }), 'conv', NOW);
    expect(outcome).toEqual({ kind: 'accepted', answer, replayed: true });
  });

  it('a 2xx that is not a protocol answer (captive portal HTML) is retried as invalid_response', async () => {
    const html = await classifyResponse(new Response('<html>login</html>', { status: 200, headers: { 'content-type': 'text/html' } }), 'conv', NOW);
    expect(html.kind).toBe('retry');
    expect(html.kind === 'retry' && isProtocolError(html.error) && html.error.code).toBe('invalid_response');
    const wrongShape = await classifyResponse(Response.json({ turnId: 'x' }, { status: 202 }), 'conv', NOW);
    expect(wrongShape.kind === 'retry' && wrongShape.error.code).toBe('invalid_response');
  });

  it('an answer for another conversation fails (retrying replays the same answer)', async () => {
    const outcome = await classifyResponse(Response.json({ ...answer, conversationId: 'other' }, { status: 202 }), 'conv', NOW);
    expect(outcome.kind === 'fail' && outcome.error.code).toBe('invalid_response');
  });

  it('a network TypeError is retried as network_error, keeping the cause', async () => {
    const cause = new TypeError('fetch failed');
    const outcome = await classifyThrown(cause);
    expect(outcome.kind === 'retry' && outcome.error.code).toBe('network_error');
    expect(outcome.kind === 'retry' && outcome.error.cause).toBe(cause);
  });

  it('a timeout (TimeoutError, or an AbortError the outbox did not cause) is retried as timeout', async () => {
    for (const error of [new DOMException('t', 'TimeoutError'), new DOMException('a', 'AbortError')]) {
      const outcome = await classifyThrown(error);
      expect(outcome.kind === 'retry' && outcome.error.code).toBe('timeout');
    }
  });

  it('anything thrown (a failing headers function) is retried, never lost', async () => {
    const outcome = await classifyThrown(new Error('token endpoint down'));
    expect(outcome.kind === 'retry' && outcome.error.code).toBe('network_error');
  });
});

describe('Retry-After', () => {
  it('delay-seconds', async () => {
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': '7' }), 'conv', NOW);
    expect(outcome.kind === 'retry' && outcome.retryAfterMs).toBe(7000);
  });

  it('an HTTP date, relative to now', async () => {
    const date = new Date(NOW + 42_000).toUTCString();
    const outcome = await classifyResponse(errorResponse(429, { 'Retry-After': date }), 'conv', NOW);
    expect(outcome.kind === 'retry' && outcome.retryAfterMs).toBe(42_000);
  });

  it('a date in the past means now', async () => {
    const date = new Date(NOW - 5_000).toUTCString();
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': date }), 'conv', NOW);
    expect(outcome.kind === 'retry' && outcome.retryAfterMs).toBe(0);
  });

  it.each(['-1', '1.5', 'soon', ''])('garbage %j is ignored (own backoff applies)', async (value) => {
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': value }), 'conv', NOW);
    expect(outcome.kind).toBe('retry');
    expect(outcome.kind === 'retry' && outcome.retryAfterMs).toBeUndefined();
  });

  it('is ignored on a 4xx that fails anyway', async () => {
    const outcome = await classifyResponse(errorResponse(400, { 'Retry-After': '5' }), 'conv', NOW);
    expect(outcome.kind).toBe('fail');
  });
});
