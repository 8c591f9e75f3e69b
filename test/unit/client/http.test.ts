/**
 * The one JSON request path (replay, list, cancel) and the classification of error
 * answers, against hand-made `Response`s: what each answer becomes, and that memory stays
 * bounded whatever the body is.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { isProtocolError, isTransportError } from '../../../src/errors.js';
import { failureFromResponse, requestJson, type JsonRequest } from '../../../src/transport/http.js';

const schema = z.object({ n: z.number() });

function request(answer: Response | Error): JsonRequest & { urls: string[] } {
  const urls: string[] = [];
  return {
    urls,
    baseUrl: 'http://x/api/',
    headers: async () => ({ authorization: 'Bearer t' }),
    clock: { now: () => 0, wallNow: () => 0 },
    fetch: async (input) => {
      urls.push(String(input));
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

const json = (body: unknown, init: ResponseInit = {}): Response =>
  new Response(JSON.stringify(body), { ...init, headers: { 'content-type': 'application/json', ...init.headers } });

/** A body that never ends: reading it to the end would hang the test. */
function endless(type: string, status = 200): { response: Response; cancelled: Promise<unknown> } {
  let cancelled!: (reason: unknown) => void;
  const body = new ReadableStream<Uint8Array>({
    pull: (controller) => controller.enqueue(new Uint8Array(1024)),
    cancel: (reason) => cancelled(reason),
  });
  return { response: new Response(body, { status, headers: { 'content-type': type } }), cancelled: new Promise((resolve) => (cancelled = resolve)) };
}

describe('requestJson', () => {
  it('answers the parsed value of a 200 JSON body, with the base joined once', async () => {
    const req = request(json({ n: 1 }));
    expect(await requestJson(req, 'GET', '/turns/t', schema, 1024)).toEqual({ ok: true, value: { n: 1 } });
    expect(req.urls).toEqual(['http://x/api/turns/t']);
  });

  it('does not read a body that is not JSON (it could be endless) and retries it as invalid_response', async () => {
    const { response, cancelled } = endless('text/html');
    const answer = await requestJson(request(response), 'GET', '/x', schema, 1024);
    await cancelled;
    expect(answer.ok || [isProtocolError(answer.failure.error), answer.failure.error.code, answer.failure.disposition]).toEqual([true, 'invalid_response', 'retry']);
  });

  it('stops reading past maxBytes and says the answer was too large', async () => {
    const { response, cancelled } = endless('application/json');
    const answer = await requestJson(request(response), 'GET', '/x', schema, 10_000);
    await cancelled;
    expect(answer.ok || [answer.tooLarge, answer.failure.error.code]).toEqual([true, 'invalid_response']);
  });

  it('retries a JSON answer that does not match the schema, and a network failure', async () => {
    const wrong = await requestJson(request(json({ n: 'one' })), 'GET', '/x', schema, 1024);
    expect(wrong.ok || [wrong.failure.error.code, wrong.failure.disposition, 'tooLarge' in wrong]).toEqual(['invalid_response', 'retry', false]);
    const down = await requestJson(request(new TypeError('fetch failed')), 'GET', '/x', schema, 1024);
    expect(down.ok || [isTransportError(down.failure.error), down.failure.error.code, down.failure.disposition]).toEqual([true, 'network_error', 'retry']);
  });
});

describe('failureFromResponse', () => {
  it.each([
    [401, 'unauthorized', 'auth'],
    [403, 'forbidden', 'auth'],
    [404, 'turn_not_found', 'fatal'],
    [410, 'turn_expired', 'fatal'],
    [418, 'http_error', 'fatal'],
    [408, 'timeout', 'retry'],
    [425, 'http_error', 'retry'],
    [429, 'rate_limited', 'retry'],
    [500, 'http_error', 'retry'],
    [503, 'server_unavailable', 'retry'],
  ])('%i is %s, %s', async (status, code, disposition) => {
    const failure = await failureFromResponse(new Response(null, { status }), 0);
    expect([failure.error.code, failure.disposition, failure.error.status]).toEqual([code, disposition, status]);
  });

  it("keeps the server's code and honours Retry-After", async () => {
    const failure = await failureFromResponse(json({ error: { code: 'overloaded', message: 'busy' } }, { status: 503, headers: { 'retry-after': '2' } }), 0);
    expect([failure.error.serverCode, failure.retryAfterMs]).toEqual(['overloaded', 2_000]);
  });

  it('asks for a rebuild from seq 0 when the server log is behind the client', async () => {
    const failure = await failureFromResponse(json({ error: { code: 'resume_point_ahead', message: 'ahead' } }, { status: 400 }), 0);
    expect([isProtocolError(failure.error), failure.error.code, failure.disposition]).toEqual([true, 'seq_mismatch', 'rebuild']);
  });

  it('classifies by status alone when the error body is not JSON, without reading it', async () => {
    const { response, cancelled } = endless('text/event-stream', 502);
    const failure = await failureFromResponse(response, 0);
    await cancelled;
    expect([failure.error.code, failure.error.serverCode, failure.disposition]).toEqual(['http_error', undefined, 'retry']);
  });
});
