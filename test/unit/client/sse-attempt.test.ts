/**
 * One stream attempt on its own, over a scripted `fetch`: how each answer ends it, that the
 * connection is closed whenever the attempt ends before the body did, and that an abort ends
 * it at once even when the fetch or its body ignores the signal.
 */
import { describe, expect, it } from 'vitest';
import type { Failure } from '../../../src/core/failure-policy.js';
import { ProtocolError } from '../../../src/errors.js';
import { runStreamAttempt, type StreamAttempt } from '../../../src/follow/sse-attempt.js';

const encoder = new TextEncoder();

/** A body that sends `text`, then stays open (`close`: ends it). */
function body(text: string, close = false) {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(text));
      if (close) controller.close();
    },
  });
  return { stream };
}

/** An attempt whose fetch answers `answer` and records the request's signal and headers. */
function attempt(answer: () => Promise<Response>, overrides: Partial<StreamAttempt> = {}) {
  const requests: { signal: AbortSignal; headers: Headers }[] = [];
  const messages: (string | undefined)[] = [];
  const opened: (number | undefined)[] = [];
  const controller = new AbortController();
  const run: StreamAttempt = {
    baseUrl: 'http://test/api/',
    path: '/turns/t1',
    fetch: (_url, init) => {
      requests.push({ signal: init!.signal!, headers: new Headers(init!.headers) });
      return answer();
    },
    headers: async () => ({ 'Last-Event-ID': '99', Accept: 'text/html', authorization: 'Bearer x' }),
    lastEventId: 3,
    limits: { maxLineBytes: 1024, maxEventBytes: 2048 },
    signal: controller.signal,
    clock: { now: () => 0, wallNow: () => 0 },
    page: { isBrowser: () => true, visible: () => false, frame: () => {}, onHide: () => {}, onResume: () => {} },
    onOpen: (heartbeatMs) => void opened.push(heartbeatMs),
    onMessage: (data) => void messages.push(data),
    ...overrides,
  };
  return { run, requests, messages, opened, controller };
}

const sse = (init: ResponseInit & { body: ReadableStream<Uint8Array> }) =>
  Promise.resolve(new Response(init.body, { status: 200, headers: { 'content-type': 'text/event-stream', 'lifeline-heartbeat': '15000' }, ...init }));

describe('runStreamAttempt', () => {
  it('sends our accept and cursor over the app’s, reads every message, and calls a clean close a cut', async () => {
    const { stream } = body('retry: 10\n\ndata: {"a":1}\nid: 7\n\nevent: heartbeat\ndata: x\n\n: comment\n\ndata: {"b":2}\n\n', true);
    const t = attempt(() => sse({ body: stream }));
    const end = await runStreamAttempt(t.run);
    expect(t.requests[0]!.headers.get('accept')).toBe('text/event-stream');
    expect(t.requests[0]!.headers.get('last-event-id')).toBe('3');
    expect(t.requests[0]!.headers.get('authorization')).toBe('Bearer x');
    expect(t.opened).toEqual([15000]);
    expect(t.messages).toEqual([undefined, '{"a":1}', undefined, undefined, '{"b":2}']);
    expect(end).toMatchObject({ kind: 'failed', closed: true, failure: { disposition: 'retry', error: { code: 'network_error' } } });
  });

  it('ends with the failure a message answered and closes the connection', async () => {
    const { stream } = body('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    const failure: Failure = { error: new ProtocolError('invalid_event', 'bad'), disposition: 'retry' };
    const t = attempt(() => sse({ body: stream }));
    t.run.onMessage = (data) => {
      t.messages.push(data);
      if (data === '2') return failure;
    };
    const end = await runStreamAttempt(t.run);
    expect(t.messages).toEqual(['1', '2']);
    expect(end).toEqual({ kind: 'failed', failure, closed: false });
    expect(t.requests[0]!.signal.aborted).toBe(true);
  });

  it('answers a 200 that is not an event stream with a retried unexpected_content_type and closes it', async () => {
    const { stream } = body('<html>');
    const t = attempt(() => Promise.resolve(new Response(stream, { status: 200, headers: { 'content-type': 'text/html' } })));
    const end = await runStreamAttempt(t.run);
    expect(end).toMatchObject({ kind: 'failed', closed: false, failure: { disposition: 'retry', error: { code: 'unexpected_content_type' } } });
    expect(t.opened).toEqual([]);
    expect(t.requests[0]!.signal.aborted).toBe(true);
  });

  it('answers 204 with no-content and other statuses by the failure policy', async () => {
    expect(await runStreamAttempt(attempt(() => Promise.resolve(new Response(null, { status: 204 }))).run)).toEqual({ kind: 'no-content' });
    const gone = attempt(() => Promise.resolve(new Response('{"error":{"code":"turn_expired","message":"x"}}', { status: 410, headers: { 'content-type': 'application/json' } })));
    expect(await runStreamAttempt(gone.run)).toMatchObject({ kind: 'failed', failure: { disposition: 'fatal', error: { code: 'turn_expired' } } });
  });

  it('retries a body past its caps with the ProtocolError the cap raised', async () => {
    const { stream } = body(`data: ${'x'.repeat(2000)}\n\n`);
    const end = await runStreamAttempt(attempt(() => sse({ body: stream })).run);
    expect(end).toMatchObject({ kind: 'failed', failure: { disposition: 'retry', error: { code: 'line_too_long' } } });
  });

  it('retries a fetch or a headers function that throws as a network error', async () => {
    const refused = attempt(() => Promise.reject(new TypeError('refused')));
    expect(await runStreamAttempt(refused.run)).toMatchObject({ kind: 'failed', failure: { disposition: 'retry', error: { code: 'network_error' } } });
    const headers = attempt(() => Promise.reject(new Error('not asked')), { headers: () => Promise.reject(new Error('refresh failed')) });
    expect(await runStreamAttempt(headers.run)).toMatchObject({ kind: 'failed', failure: { disposition: 'retry', error: { code: 'network_error' } } });
    expect(headers.requests).toEqual([]);
  });

  it('ends aborted at once, even when the fetch never settles and ignores its signal', async () => {
    let asked!: () => void;
    const fetched = new Promise<void>((resolve) => (asked = resolve));
    const t = attempt(() => (asked(), new Promise<Response>(() => {})));
    const end = runStreamAttempt(t.run);
    await fetched;
    t.controller.abort();
    expect(await end).toEqual({ kind: 'aborted' });
    expect(t.requests[0]!.signal.aborted).toBe(true);
  });

  it('applies nothing of a chunk after an abort raised by one of its messages', async () => {
    const { stream } = body('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    const t = attempt(() => sse({ body: stream }));
    t.run.onMessage = (data) => {
      t.messages.push(data);
      if (data === '1') t.controller.abort();
    };
    expect(await runStreamAttempt(t.run)).toEqual({ kind: 'aborted' });
    expect(t.messages).toEqual(['1']);
  });

  it('fails without a browser, before any request', async () => {
    const t = attempt(() => Promise.reject(new Error('not asked')));
    t.run.page = { ...t.run.page, isBrowser: () => false };
    expect(await runStreamAttempt(t.run)).toMatchObject({ kind: 'failed', failure: { disposition: 'fatal', error: { code: 'invalid_argument' } } });
    expect(t.requests).toEqual([]);
  });
});
