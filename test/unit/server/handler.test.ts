/**
 * Handler behaviour beyond the wire protocol, called directly with Request objects:
 * base paths, shutdown, misbehaving agents and stores, auth edge cases.
 */
import { describe, expect, it } from 'vitest';
import { errorBodySchema, submitAnswerSchema, turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { createLifelineHandler, type LifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { turnObject } from '../../../src/server/http/turn-routes.js';
import { newKey, textOf, waitForTurnEnd } from '../../fixtures/server.js';

const ORIGIN = 'http://lifeline.test';

function submitRequest(path: string, content: unknown = 'hi', headers: Record<string, string> = {}): Request {
  return new Request(`${ORIGIN}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': newKey(), ...headers },
    body: JSON.stringify({ content }),
  });
}

async function submit(handler: LifelineHandler, prefix = ''): Promise<string> {
  const response = await handler(submitRequest(`${prefix}/conversations/c1/messages`));
  expect(response.status).toBe(202);
  return submitAnswerSchema.parse(await response.json()).turnId;
}

async function events(log: TurnLog, turnId: string): Promise<TurnEvent[]> {
  return (await log.read(turnId, 0, 10_000)).events.map((event) => turnEventSchema.parse(event));
}

describe('createLifelineHandler', () => {
  it('serves at the root by default and normalises a base path', async () => {
    const root = createLifelineHandler({ agent: textAgent('x'), onError: () => undefined });
    await submit(root);
    await root.close();
    for (const basePath of ['/api', 'api', '/api/', 'api/']) {
      const handler = createLifelineHandler({ agent: textAgent('x'), basePath, onError: () => undefined });
      await submit(handler, '/api');
      expect((await handler(new Request(`${ORIGIN}/conversations/c1/turns`))).status).toBe(404);
      await handler.close();
    }
  });

  it('answers HEAD on GET routes like GET without a body, and 405 to OPTIONS without cors', async () => {
    const handler = createLifelineHandler({ agent: textAgent('x'), onError: () => undefined });
    const head = await handler(new Request(`${ORIGIN}/conversations/c1/turns`, { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json');
    expect(head.body).toBeNull();
    const options = await handler(new Request(`${ORIGIN}/conversations/c1/turns`, { method: 'OPTIONS' }));
    expect(options.status).toBe(405);
    expect(options.headers.get('allow')).toBe('GET, HEAD');
    const postHead = await handler(new Request(`${ORIGIN}/conversations/c1/messages`, { method: 'HEAD' }));
    expect(postHead.status).toBe(405);
    expect(postHead.headers.get('allow')).toBe('POST');
    await handler.close();
  });

  it('caps live turns at 1000 by default: the next submission answers 503 overloaded with Retry-After', async () => {
    // An agent that produces nothing until its turn is stopped.
    const stuck: Agent = async function* ({ signal }) {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    };
    const handler = createLifelineHandler({ agent: stuck, onError: () => undefined });
    for (let i = 0; i < 1000; i++) await submit(handler);
    const refused = await handler(submitRequest('/conversations/c1/messages'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(errorBodySchema.parse(await refused.json()).error.code).toBe('overloaded');
    await handler.close();
  });

  it('close() ends every live turn failed with server_shutdown', async () => {
    const agent = controlledAgent();
    const log = createMemoryTurnLog();
    const handler = createLifelineHandler({ agent: agent.agent, store: log, onError: () => undefined });
    const turnId = await submit(handler);
    const control = await agent.nextTurn();
    await control.delta('half');
    await handler.close();
    expect(control.context.signal.aborted).toBe(true);
    const logged = await events(log, turnId);
    expect(logged.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'server_shutdown' }, textLength: 4 });
    await log.close();
  });

  it('treats an agent that throws before yielding as a failed turn', async () => {
    const errors: unknown[] = [];
    const log = createMemoryTurnLog();
    const throwing: Agent = () => {
      throw new Error('not even a generator');
    };
    const handler = createLifelineHandler({ agent: throwing, store: log, onError: (error, context) => errors.push(context.phase) });
    const turnId = await submit(handler);
    await waitForTurnEnd(log, turnId);
    expect((await events(log, turnId)).at(-1)).toMatchObject({ status: 'failed', error: { code: 'agent_failed' }, textLength: 0 });
    expect(errors).toEqual(['agent']);
    await handler.close();
    await log.close();
  });

  it('ends a turn failed with store_failed when an append fails mid-turn, hashing what was logged', async () => {
    const errors: unknown[] = [];
    const inner = createMemoryTurnLog();
    let appends = 0;
    const flaky: TurnLog = Object.create(inner) as TurnLog;
    flaky.append = async (turnId, event) => {
      appends++;
      if (appends === 4) throw new Error('store hiccup');
      return inner.append(turnId, event);
    };
    const handler = createLifelineHandler({ agent: textAgent('abcdefghij', { chunk: 2 }), store: flaky, onError: (error) => errors.push(error) });
    const turnId = await submit(handler);
    await waitForTurnEnd(inner, turnId);
    const logged = await events(inner, turnId);
    expect(logged.map((event) => event.type)).toEqual(['turn.start', 'delta', 'delta', 'turn.end']);
    const end = logged.at(-1);
    expect(end).toMatchObject({ status: 'failed', error: { code: 'store_failed' }, textLength: 4 });
    expect(end?.type === 'turn.end' && end.textSha256).toBe(await sha256Hex(textOf(logged)));
    expect(errors).toHaveLength(1);
    await handler.close();
    await inner.close();
  });

  it('answers 401 when authorize returns no principal, and passes the principal to the agent', async () => {
    const agent = controlledAgent();
    const handler = createLifelineHandler({
      agent: agent.agent,
      authorize: async (request) => request.headers.get('authorization')?.replace('Bearer ', '') ?? '',
      onError: () => undefined,
    });
    const denied = await handler(submitRequest('/conversations/c1/messages'));
    expect(denied.status).toBe(401);
    expect(errorBodySchema.parse(await denied.json()).error.code).toBe('unauthorized');
    const allowed = await handler(submitRequest('/conversations/c1/messages', 'hi', { authorization: 'Bearer alice' }));
    expect(allowed.status).toBe(202);
    const control = await agent.nextTurn();
    expect(control.context.principal).toBe('alice');
    await control.end();
    await handler.close();
  });

  it('stops a follow stream and releases its waiter when the request signal aborts', async () => {
    const agent = controlledAgent();
    const inner = createMemoryTurnLog();
    let waiting = 0;
    const counting: TurnLog = Object.create(inner) as TurnLog;
    counting.waitForEvents = async (...args) => {
      waiting++;
      try {
        await inner.waitForEvents(...args);
      } finally {
        waiting--;
      }
    };
    const handler = createLifelineHandler({ agent: agent.agent, store: counting, onError: () => undefined });
    const turnId = await submit(handler);
    const control = await agent.nextTurn();
    const abort = new AbortController();
    const response = await handler(new Request(`${ORIGIN}/turns/${turnId}/events`, { signal: abort.signal }));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while (!text.includes('event: turn.start')) text += new TextDecoder().decode((await reader.read()).value);
    const next = reader.read();
    await expect.poll(() => waiting).toBe(1);
    abort.abort();
    await expect.poll(() => waiting).toBe(0);
    expect((await next).done).toBe(true);
    await control.end();
    await handler.close();
    await inner.close();
  });
  it('answers replays of an ended turn from its cached page: the log read once, the same JSON, the record fresh each time', async () => {
    const inner = createMemoryTurnLog();
    let reads = 0;
    const counting: TurnLog = Object.create(inner) as TurnLog;
    counting.read = async (...args) => {
      reads++;
      return inner.read(...args);
    };
    const handler = createLifelineHandler({ agent: textAgent('hello there, cached'), store: counting, onError: () => undefined });
    const turnId = await submit(handler);
    const ended = await waitForTurnEnd(inner, turnId);
    const url = `${ORIGIN}/turns/${turnId}?after=1&limit=3`;
    const first = await (await handler(new Request(url))).text();
    const page = await inner.read(turnId, 1, 3);
    const stored = await inner.getTurn(turnId);
    if (stored === undefined || 'expired' in stored) throw new Error('the turn is gone');
    expect(first).toBe(JSON.stringify({ turn: turnObject(stored), events: page.events, hasMore: page.hasMore }));
    const readsBefore = reads;
    expect(await (await handler(new Request(url))).text()).toBe(first);
    expect(reads).toBe(readsBefore);
    // A receipt changes the record, not the page: the next replay says delivered, still without a read.
    const text = textOf(await events(inner, turnId));
    const receipt = await handler(
      new Request(`${ORIGIN}/turns/${turnId}/delivered`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seq: ended.lastSeq, textSha256: await sha256Hex(text) }),
      }),
    );
    expect(receipt.status).toBe(200);
    const again = JSON.parse(await (await handler(new Request(url))).text()) as { turn: { delivery: { state: string } }; events: unknown[] };
    expect(again.turn.delivery.state).toBe('delivered');
    expect(again.events).toEqual(page.events);
    expect(reads).toBe(readsBefore);
    await handler.close();
    await inner.close();
  });
});
