/**
 * The handler on a bad day, on the memory log: cross-site requests and CORS
 * (docs/faults.md #52), a failing or silent turn log (#51), readiness, a drain before a
 * deploy (#50), HEAD, and an HTTP/1.1 request without Host.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { errorBodySchema, submitAnswerSchema } from '../../../../src/protocol/schemas.js';
import { createLifelineHandler, type LifelineHandler, type LifelineHandlerOptions } from '../../../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../../../src/server/log/memory/index.js';
import type { TurnLog } from '../../../../src/server/log/turn-log.js';
import { serve } from '../../../../src/server/node/index.js';
import { controlledAgent, textAgent } from '../../../fixtures/agents.js';
import { newKey, textOf, waitForTurnEnd } from '../../../fixtures/server.js';
import { CHUNKED_END, openRaw } from '../raw-http.js';

const ORIGIN = 'http://api.lifeline.test';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function handlerWith(options: Partial<LifelineHandlerOptions> = {}): LifelineHandler {
  const handler = createLifelineHandler({ agent: textAgent('x'), onError: () => undefined, ...options });
  cleanups.push(() => handler.close());
  return handler;
}

function submitRequest(headers: Record<string, string> = {}): Request {
  return new Request(`${ORIGIN}/conversations/c1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': newKey(), ...headers },
    body: JSON.stringify({ content: 'hi' }),
  });
}

async function codeOf(response: Response): Promise<string> {
  return errorBodySchema.parse(await response.json()).error.code;
}

describe('cross-site requests and CORS', () => {
  it('refuses a cross-site cancel without a preflight (text/plain, or Sec-Fetch-Site: cross-site) and the turn keeps streaming', async () => {
    const agent = controlledAgent();
    const log = createMemoryTurnLog();
    const handler = handlerWith({ agent: agent.agent, store: log });
    const turnId = submitAnswerSchema.parse(await (await handler(submitRequest())).json()).turnId;
    const control = await agent.nextTurn();
    await control.delta('still ');
    const cancel = (headers: Record<string, string>): Promise<Response> =>
      handler(new Request(`${ORIGIN}/turns/${turnId}/cancel`, { method: 'POST', headers }));
    // A form-like post: a content type no preflight guards.
    const plain = await cancel({ 'content-type': 'text/plain', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' });
    expect(plain.status).toBe(400);
    expect(await codeOf(plain)).toBe('unsupported_media_type');
    // A bodiless no-cors fetch: only Sec-Fetch-Site tells.
    for (const site of ['cross-site', 'same-site']) {
      const refused = await cancel({ origin: 'https://evil.example', 'sec-fetch-site': site });
      expect(refused.status).toBe(403);
      expect(await codeOf(refused)).toBe('cross_site_request');
    }
    const submitted = await handler(submitRequest({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }));
    expect(submitted.status).toBe(403);
    await control.delta('streaming');
    await control.end();
    const ended = await waitForTurnEnd(log, turnId);
    expect(ended.status).toBe('complete');
    const { events } = await log.read(turnId, 0, 100);
    expect(textOf(events)).toBe('still streaming');
    // The same-origin page and a non-browser client (no Sec-Fetch-Site) still cancel.
    expect((await cancel({ 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await cancel({})).status).toBe(200);
  });

  it('answers preflights and sets the headers for allowed origins, with credentials for cookie auth', async () => {
    const app = 'https://app.example.com';
    const handler = handlerWith({
      cors: { origins: [app], credentials: true },
      authorize: (request) => (request.headers.get('cookie') === 'session=alice' ? 'alice' : Promise.reject(new Error('no session'))),
    });
    const preflight = await handler(
      new Request(`${ORIGIN}/conversations/c1/messages`, {
        method: 'OPTIONS',
        headers: { origin: app, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, idempotency-key, x-app' },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(app);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('x-app');
    expect(preflight.headers.get('vary')).toContain('origin');

    const submitted = await handler(submitRequest({ origin: app, 'sec-fetch-site': 'cross-site', cookie: 'session=alice' }));
    expect(submitted.status).toBe(202);
    expect(submitted.headers.get('access-control-allow-origin')).toBe(app);
    expect(submitted.headers.get('access-control-allow-credentials')).toBe('true');
    expect(submitted.headers.get('access-control-expose-headers')).toContain('retry-after');

    const foreign = await handler(
      new Request(`${ORIGIN}/conversations/c1/messages`, {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      }),
    );
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    const foreignPost = await handler(submitRequest({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', cookie: 'session=alice' }));
    expect(foreignPost.status).toBe(403);
    expect(foreignPost.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('a failing or silent turn log', () => {
  it('answers 503 unavailable with Retry-After when the log throws or never answers, and /healthz says so', async () => {
    const inner = createMemoryTurnLog();
    let mode: 'fine' | 'throws' | 'hangs' = 'fine';
    const log: TurnLog = Object.create(inner) as TurnLog;
    const broken = <T>(call: () => Promise<T>): Promise<T> =>
      mode === 'fine' ? call() : mode === 'throws' ? Promise.reject(new Error('ECONNREFUSED')) : new Promise<T>(() => undefined);
    log.getTurn = (turnId) => broken(() => inner.getTurn(turnId));
    log.putIdempotencyIfAbsent = (...args) => broken(() => inner.putIdempotencyIfAbsent(...args));
    log.listTurns = (...args) => broken(() => inner.listTurns(...args));
    log.ping = () => broken(() => Promise.resolve());
    const errors: unknown[] = [];
    const handler = handlerWith({ store: log, storeTimeoutMs: 100, onError: (error) => errors.push(error) });
    expect((await handler(new Request(`${ORIGIN}/healthz`))).status).toBe(200);
    for (const next of ['throws', 'hangs'] as const) {
      mode = next;
      for (const request of [submitRequest(), new Request(`${ORIGIN}/turns/t1/events`), new Request(`${ORIGIN}/conversations/c1/turns`), new Request(`${ORIGIN}/healthz`)]) {
        const response = await handler(request);
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('1');
        expect(await codeOf(response)).toBe('unavailable');
      }
    }
    // Each failure reached the operator.
    expect(errors.length).toBe(8);
    mode = 'fine';
    expect((await handler(submitRequest())).status).toBe(202);
  });
});

describe('drain', () => {
  it('refuses submissions with 503 shutting_down while live turns finish, then ends the rest server_shutdown', async () => {
    const agent = controlledAgent();
    const log = createMemoryTurnLog();
    const handler = handlerWith({ agent: agent.agent, store: log });
    const first = submitAnswerSchema.parse(await (await handler(submitRequest())).json()).turnId;
    const second = submitAnswerSchema.parse(await (await handler(submitRequest())).json()).turnId;
    const [a, b] = [await agent.nextTurn(), await agent.nextTurn()];
    await a.delta('finishes ');
    const stream = await handler(new Request(`${ORIGIN}/turns/${first}/events`));
    expect(stream.status).toBe(200);

    const closed = handler.close({ drainMs: 60_000 });
    const refused = await handler(submitRequest());
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await codeOf(refused)).toBe('shutting_down');
    expect((await handler(new Request(`${ORIGIN}/healthz`))).status).toBe(503);
    // Live turns go on; their follower keeps streaming to the end.
    await a.delta('in the drain');
    await a.end();
    await b.end();
    await closed;
    const body = await stream.text();
    expect(body).toContain('finishes ');
    expect(body).toContain('in the drain');
    expect(body).toContain('"type":"turn.end","status":"complete"');
    expect((await waitForTurnEnd(log, second)).status).toBe('complete');

    // A drain that runs out ends what is left.
    const other = controlledAgent();
    const short = handlerWith({ agent: other.agent, store: log });
    const stuck = submitAnswerSchema.parse(await (await short(submitRequest())).json()).turnId;
    await (await other.nextTurn()).delta('never finished');
    await short.close({ drainMs: 50 });
    const { events } = await log.read(stuck, 0, 100);
    expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'server_shutdown' } });
  });
});

describe('HTTP edges through serve()', () => {
  it('answers an HTTP/1.1 request without Host with the typed 400, and HEAD on a follow stream with headers only', async () => {
    const handler = handlerWith();
    const served = await serve(handler);
    cleanups.push(() => served.close());
    const raw = await openRaw(served.url, 'GET /conversations/c1/turns HTTP/1.1\r\nConnection: close\r\n\r\n');
    const text = (await raw.readUntil((tail) => tail.endsWith(CHUNKED_END))).toString();
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain('"code":"bad_request"');

    const turnId = submitAnswerSchema.parse(await (await fetch(`${served.url}/conversations/c1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
      body: JSON.stringify({ content: 'hi' }),
    })).json()).turnId;
    const head = await fetch(`${served.url}/turns/${turnId}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});
