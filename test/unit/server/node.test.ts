import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { errorBodySchema } from '../../../src/protocol/schemas.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { serve, type FetchHandler, type ServedHandler } from '../../../src/server/node/index.js';
import { textAgent } from '../../fixtures/agents.js';
import { getRequest, openRaw, parseResponse, type RawResponse } from './raw-http.js';

const servers: ServedHandler[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function start(handler: FetchHandler, errors: unknown[] = []): Promise<ServedHandler> {
  const served = await serve(handler, { onError: (error) => errors.push(error) });
  servers.push(served);
  return served;
}

/** Sends `request` raw and reads the one answer (the server closes after it). */
async function rawAnswer(origin: string, request: string): Promise<RawResponse> {
  const connection = await openRaw(origin, request);
  // Every error body ends with '}}'; a server that answers without one closes the connection.
  const received = await connection.readUntil((tail) => tail.endsWith('}}')).catch(() => connection.received());
  const answer = parseResponse(received);
  if (!answer) throw new Error(`no complete answer: ${received.toString('latin1').slice(0, 200)}`);
  return answer;
}

function errorCode(answer: RawResponse): string {
  expect(answer.headers.get('content-type')).toBe('application/json');
  return errorBodySchema.parse(JSON.parse(answer.body.toString('utf8'))).error.code;
}

describe('node adapter', () => {
  it('binds 127.0.0.1 on an ephemeral port and passes method, url, headers and body through', async () => {
    let seen: { method: string; url: string; header: string | null; body: string } | undefined;
    const served = await start(async (request) => {
      seen = { method: request.method, url: request.url, header: request.headers.get('x-test'), body: await request.text() };
      const headers = new Headers({ 'content-type': 'text/plain', 'x-answer': 'yes' });
      headers.append('set-cookie', 'a=1');
      headers.append('set-cookie', 'b=2');
      return new Response('hello', { status: 201, headers });
    });
    expect(served.url).toBe(`http://127.0.0.1:${served.port}`);
    expect(served.port).toBeGreaterThan(0);
    const response = await fetch(`${served.url}/some/path?q=1`, { method: 'PUT', headers: { 'x-test': 'abc' }, body: 'payload ✓' });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('hello');
    expect(response.headers.get('x-answer')).toBe('yes');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(seen).toEqual({ method: 'PUT', url: `${served.url}/some/path?q=1`, header: 'abc', body: 'payload ✓' });
  });

  it('answers 500 internal_error when the handler throws, and keeps serving', async () => {
    const errors: unknown[] = [];
    let fail = true;
    const served = await start(async () => {
      if (fail) throw new Error('boom');
      return new Response('ok');
    }, errors);
    const response = await fetch(served.url);
    expect(response.status).toBe(500);
    expect(errorBodySchema.parse(await response.json()).error.code).toBe('internal_error');
    expect(errors).toHaveLength(1);
    fail = false;
    expect(await (await fetch(served.url)).text()).toBe('ok');
  });

  it('aborts the request signal and cancels the body when the client disconnects mid-stream', async () => {
    let aborted!: () => void;
    const signalAborted = new Promise<void>((resolve) => (aborted = resolve));
    let cancelled!: () => void;
    const bodyCancelled = new Promise<void>((resolve) => (cancelled = resolve));
    const served = await start(async (request) => {
      request.signal.addEventListener('abort', () => aborted());
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('first\n'));
        },
        cancel() {
          cancelled();
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    });
    const abort = new AbortController();
    const response = await fetch(served.url, { signal: abort.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first\n');
    abort.abort();
    await Promise.all([signalAborted, bodyCancelled]);
  });

  it('applies backpressure: a reader that does not read stops the body from being pulled', async () => {
    let pulled = 0;
    let finished!: () => void;
    const allPulled = new Promise<void>((resolve) => (finished = resolve));
    const chunk = new Uint8Array(64 * 1024).fill(120);
    const total = 400; // 25 MiB if nothing held it back
    const served = await start(async () => {
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled++;
          controller.enqueue(chunk);
          if (pulled === total) {
            controller.close();
            finished();
          }
        },
      });
      return new Response(body);
    });
    // A raw request whose response is paused: nothing drains the socket.
    const paused = await new Promise<import('node:http').IncomingMessage>((resolve) => {
      const req = httpRequest(served.url, (res) => {
        res.pause();
        resolve(res);
      });
      req.end();
    });
    // Wait until the server side has filled every buffer it may, then check it stopped.
    await expect
      .poll(
        async () => {
          const before = pulled;
          await new Promise((resolve) => setImmediate(resolve));
          await new Promise((resolve) => setImmediate(resolve));
          return pulled === before;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    expect(pulled).toBeLessThan(total);
    // Reading resumes the pulls until the end.
    let received = 0;
    paused.on('data', (data: Buffer) => (received += data.byteLength));
    paused.resume();
    await allPulled;
    await new Promise((resolve) => paused.on('end', resolve));
    expect(received).toBe(total * chunk.byteLength);
  });

  it('answers 413 through the adapter even while the client is still sending', async () => {
    const served = await start(async (request) => {
      const reader = (request.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      await reader.cancel();
      return new Response('too large', { status: 413 });
    });
    const response = await fetch(served.url, { method: 'POST', body: 'x'.repeat(2 * 1024 * 1024) });
    expect(response.status).toBe(413);
    expect(await response.text()).toBe('too large');
  });

  it('close() ends open streams', async () => {
    const served = await serve(async () => new Response(new ReadableStream({ start() {} }), { headers: { 'content-type': 'text/event-stream' } }));
    const response = await fetch(served.url);
    expect(response.status).toBe(200);
    const reading = response.text().catch(() => 'cut');
    await served.close();
    expect(await reading).toBe('cut');
  });

  it('answers methods a Request cannot carry, and what the parser refuses, with typed bodies; no error logged', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const served = await start(async () => {
      calls++;
      return new Response('ok');
    }, errors);
    const cases: [request: string, status: number, code: string][] = [
      [getRequest('/x').replace('GET', 'TRACE'), 405, 'method_not_allowed'],
      [getRequest('/x').replace('GET', 'trace'), 405, 'method_not_allowed'],
      [getRequest('/x').replace('GET', 'TRACK'), 405, 'method_not_allowed'],
      [getRequest('/x').replace('GET', 'BREW'), 405, 'method_not_allowed'],
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'method_not_allowed'],
      [getRequest('/x', { 'x-big': 'y'.repeat(20 * 1024) }), 431, 'headers_too_large'],
      ['GET /x HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n', 400, 'bad_request'],
    ];
    for (const [request, status, code] of cases) {
      const answer = await rawAnswer(served.url, request);
      expect(answer.status, request.slice(0, 12)).toBe(status);
      expect(errorCode(answer)).toBe(code);
      if (status === 405) expect(answer.headers.get('allow')).toContain('GET');
    }
    expect(calls).toBe(0);
    expect(errors).toEqual([]);
    // The server still serves.
    expect(await (await fetch(served.url)).text()).toBe('ok');
  });

  it('closes the connection after a 413 for a chunked body that goes on, instead of reading it all', async () => {
    const handler = createLifelineHandler({ agent: textAgent('hi') });
    const served = await start(handler);
    const head = [
      'POST /conversations/c1/messages HTTP/1.1',
      'Host: 127.0.0.1',
      'Content-Type: application/json',
      'Idempotency-Key: chunked-oversize-0001',
      'Transfer-Encoding: chunked',
    ].join('\r\n');
    const chunk = `4000\r\n${'x'.repeat(0x4000)}\r\n`;
    const connection = await openRaw(served.url, `${head}\r\n\r\n${chunk.repeat(5)}`);
    const received = await connection.readUntil((tail) => tail.includes('}}'));
    const answer = parseResponse(received);
    expect(answer?.status).toBe(413);
    expect(answer && errorCode(answer)).toBe('payload_too_large');
    expect(answer?.headers.get('connection')).toBe('close');
    // The body ends and a second request follows on the same connection: a server that
    // drained the body would answer it; this one has closed the connection.
    connection.socket.write(`0\r\n\r\n${getRequest('/conversations/c1/turns')}`);
    await connection.closed;
    expect(connection.received().toString('latin1').match(/HTTP\/1\.1 /g)).toHaveLength(1);
    await handler.close();
  });
});
