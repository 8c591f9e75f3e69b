import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { errorBodySchema } from '../../../src/protocol/schemas.js';
import { serve, type FetchHandler, type ServedHandler } from '../../../src/server/node.js';

const servers: ServedHandler[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function start(handler: FetchHandler, errors: unknown[] = []): Promise<ServedHandler> {
  const served = await serve(handler, { onError: (error) => errors.push(error) });
  servers.push(served);
  return served;
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
});
