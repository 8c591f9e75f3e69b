/**
 * The retry classification table: what the outbox decides after one submit attempt,
 * for every status and every kind of failure (the first decision it makes about an
 * entry: accepted, a retry, or failed).
 */
import { describe, expect, it } from 'vitest';
import { isProtocolError, isTransportError, type LifelineError } from '../../../src/errors.js';
import { createOutbox } from '../../../src/outbox/outbox.js';
import type { SubmitAnswer } from '../../../src/protocol/schemas.js';
import { baseDeps, createFakeFetch, createFakeStorage, createRecorder, until } from './helpers.js';

const answer = { turnId: 'turn_1', messageId: 'msg_1', conversationId: 'conv', status: 'pending' };
const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
/** The outbox's own backoff before the second attempt: uniform in [0, 250) with `random` 0.5. */
const OWN_DELAY = 125;

type Decision =
  | { kind: 'accepted'; answer: SubmitAnswer; replayed: boolean }
  | { kind: 'retry'; error: LifelineError; delayMs: number }
  | { kind: 'fail'; error: LifelineError };

/** Posts one entry whose first attempt gets `respond()`, and answers what the outbox decided. */
async function decide(respond: () => Response | Promise<Response>): Promise<Decision> {
  const recorder = createRecorder();
  const answers: SubmitAnswer[] = [];
  const outbox = createOutbox(
    baseDeps({
      storage: createFakeStorage(),
      fetch: createFakeFetch(() => respond()),
      emit: recorder.emit,
      clock: { now: () => NOW, wallNow: () => NOW },
      random: () => 0.5,
      onAccepted: (_entry, submitAnswer) => void answers.push(submitAnswer),
    }),
  );
  try {
    outbox.enqueue('conv', 'x');
    await until(() => answers.length > 0 || recorder.of('retry').length > 0 || recorder.of('failed').length > 0, 'a decision');
  } finally {
    outbox.dispose();
  }
  const [retry] = recorder.of('retry');
  const [failed] = recorder.of('failed');
  const [accepted] = recorder.of('accepted');
  if (retry?.cause) return { kind: 'retry', error: retry.cause, delayMs: retry.delayMs };
  if (failed) return { kind: 'fail', error: failed.error };
  return { kind: 'accepted', answer: answers[0] as SubmitAnswer, replayed: accepted?.replayed ?? false };
}

const classifyResponse = (response: Response): Promise<Decision> => decide(() => response);
const classifyThrown = (error: unknown): Promise<Decision> => decide(() => Promise.reject(error));

function errorResponse(status: number, headers: Record<string, string> = {}, code = 'some_code'): Response {
  return Response.json({ error: { code, message: 'nope' } }, { status, headers });
}

describe('retry classification', () => {
  it.each([408, 409, 425, 429, 500, 501, 502, 503, 504, 599])('%i is retried with the server code kept', async (status) => {
    const outcome = await classifyResponse(errorResponse(status));
    expect(outcome.kind).toBe('retry');
    if (outcome.kind !== 'retry') return;
    expect(isTransportError(outcome.error)).toBe(true);
    expect(outcome.error.status).toBe(status);
    expect(outcome.error.serverCode).toBe('some_code');
    expect(outcome.delayMs).toBe(OWN_DELAY);
  });

  it.each([
    [408, 'timeout'],
    [429, 'rate_limited'],
    [503, 'server_unavailable'],
    [500, 'http_error'],
    [409, 'http_error'],
  ])('%i maps to code %s', async (status, code) => {
    const outcome = await classifyResponse(errorResponse(status));
    expect(outcome.kind === 'retry' && outcome.error.code).toBe(code);
  });

  it.each([400, 401, 403, 404, 405, 410, 413, 415, 422, 451])('%i fails at once as submission_rejected', async (status) => {
    const outcome = await classifyResponse(errorResponse(status, {}, 'idempotency_key_reused'));
    expect(outcome.kind).toBe('fail');
    if (outcome.kind !== 'fail') return;
    expect(outcome.error.code).toBe('submission_rejected');
    expect(outcome.error.status).toBe(status);
    expect(outcome.error.serverCode).toBe('idempotency_key_reused');
  });

  it('a 4xx without a protocol error body still fails, with no server code', async () => {
    const outcome = await classifyResponse(new Response('<html>bad</html>', { status: 400 }));
    expect(outcome.kind === 'fail' && outcome.error.serverCode).toBeUndefined();
    expect(outcome.kind).toBe('fail');
  });

  it('the retryable set is exactly 408, 409, 425, 429 and 5xx (of every non-2xx status)', async () => {
    const retryable: number[] = [];
    for (let status = 300; status < 600; status++) {
      if ((await classifyResponse(new Response(null, { status }))).kind === 'retry') retryable.push(status);
    }
    expect(retryable).toEqual([408, 409, 425, 429, ...Array.from({ length: 100 }, (_, i) => 500 + i)]);
  });

  it('202 is accepted, not replayed', async () => {
    const outcome = await classifyResponse(Response.json(answer, { status: 202 }));
    expect(outcome).toEqual({ kind: 'accepted', answer, replayed: false });
  });

  it('200 with Idempotent-Replayed is accepted and replayed', async () => {
    const outcome = await classifyResponse(Response.json(answer, { status: 200, headers: { 'Idempotent-Replayed': 'true' } }));
    expect(outcome).toEqual({ kind: 'accepted', answer, replayed: true });
  });

  it('a 2xx that is not a protocol answer (captive portal HTML) is retried as invalid_response', async () => {
    const html = await classifyResponse(new Response('<html>login</html>', { status: 200, headers: { 'content-type': 'text/html' } }));
    expect(html.kind).toBe('retry');
    expect(html.kind === 'retry' && isProtocolError(html.error) && html.error.code).toBe('invalid_response');
    const wrongShape = await classifyResponse(Response.json({ turnId: 'x' }, { status: 202 }));
    expect(wrongShape.kind === 'retry' && wrongShape.error.code).toBe('invalid_response');
  });

  it('an answer for another conversation fails (retrying replays the same answer)', async () => {
    const outcome = await classifyResponse(Response.json({ ...answer, conversationId: 'other' }, { status: 202 }));
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
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': '7' }));
    expect(outcome.kind === 'retry' && outcome.delayMs).toBe(7000);
  });

  it('an HTTP date, relative to now', async () => {
    const date = new Date(NOW + 42_000).toUTCString();
    const outcome = await classifyResponse(errorResponse(429, { 'Retry-After': date }));
    expect(outcome.kind === 'retry' && outcome.delayMs).toBe(42_000);
  });

  it('a date in the past means now: the own backoff applies', async () => {
    const date = new Date(NOW - 5_000).toUTCString();
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': date }));
    expect(outcome.kind === 'retry' && outcome.delayMs).toBe(OWN_DELAY);
  });

  it.each(['-1', '1.5', 'soon', ''])('garbage %j is ignored (own backoff applies)', async (value) => {
    const outcome = await classifyResponse(errorResponse(503, { 'Retry-After': value }));
    expect(outcome.kind).toBe('retry');
    expect(outcome.kind === 'retry' && outcome.delayMs).toBe(OWN_DELAY);
  });

  it('is ignored on a 4xx that fails anyway', async () => {
    const outcome = await classifyResponse(errorResponse(400, { 'Retry-After': '5' }));
    expect(outcome.kind).toBe('fail');
  });
});
