/**
 * The follow stream's fan-out: one feed per live turn wakes every follower waiting at its
 * head (in slices when there are many), and the Node adapter writes those shared frames
 * straight to its connections. Both ways of reading a follow answer, the web stream and
 * the Node adapter, carry the same bytes.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { submitAnswerSchema } from '../../../src/protocol/schemas.js';
import { createLifelineHandler, type LifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryTurnLog, type MemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { serve, type ServedHandler } from '../../../src/server/node/index.js';
import { controlledAgent, type ControlledAgent } from '../../fixtures/agents.js';
import { newKey } from '../../fixtures/server.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  agent: ControlledAgent;
  log: MemoryTurnLog;
  handler: LifelineHandler;
  served: ServedHandler;
}

async function setup(): Promise<Setup> {
  const agent = controlledAgent();
  const log = createMemoryTurnLog();
  // No idle beat during a test: a heartbeat would land in one stream and not the other.
  const handler = createLifelineHandler({ agent: agent.agent, store: log, heartbeatMs: 60_000, onError: () => undefined });
  const served = await serve(handler);
  cleanups.push(() => log.close(), () => handler.close(), () => served.close());
  return { agent, log, handler, served };
}

async function submit(served: ServedHandler): Promise<string> {
  const response = await fetch(`${served.url}/conversations/c1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
    body: JSON.stringify({ content: 'hi' }),
  });
  expect(response.status).toBe(202);
  return submitAnswerSchema.parse(await response.json()).turnId;
}

/** A follow answer read over HTTP through the Node adapter, once its headers came; `body` resolves at its end. */
function followOverHttp(url: string, headers: Record<string, string> = {}): Promise<{ body: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      expect(res.statusCode).toBe(200);
      res.setEncoding('utf8');
      const body = new Promise<string>((done) => {
        let text = '';
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => done(text));
      });
      resolve({ body });
    });
    req.once('error', reject);
    req.end();
  });
}

/** The whole body of a follow answer read from the handler's web stream. */
async function followOverWeb(handler: LifelineHandler, url: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await handler(new Request(url, { headers }));
  expect(response.status).toBe(200);
  return response.text();
}

const frameIds = (body: string): number[] => [...body.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));

describe('follow fan-out', () => {
  it('writes the same bytes through the Node adapter as the web stream carries, live and resumed', async () => {
    const { agent, log, handler, served } = await setup();
    const turnId = await submit(served);
    const control = await agent.nextTurn();
    // Multi-byte text: frame ends in a shared batch are byte offsets, not string offsets.
    await control.delta('one é ');
    await control.delta('two 😀 ');
    const url = `${served.url}/turns/${turnId}/events`;
    const overHttp = await Promise.all([followOverHttp(url), followOverHttp(url, { 'last-event-id': '2' })]);
    const overWeb = [followOverWeb(handler, url), followOverWeb(handler, url, { 'last-event-id': '2' })];
    for (const text of ['three ', 'four ', 'five']) await control.delta(text);
    await control.end();
    const [fromStart, resumed] = await Promise.all(overHttp.map((answer) => answer.body));
    const [webStart, webResumed] = await Promise.all(overWeb);
    expect(frameIds(fromStart ?? '')).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(frameIds(resumed ?? '')).toEqual([3, 4, 5, 6, 7]);
    expect(fromStart).toBe(webStart);
    expect(resumed).toBe(webResumed);
    // Byte for byte what section 2 says, from the log: `retry:`, then one message per event after the resume point.
    const logged = (await log.read(turnId, 0, 100)).events;
    const expected = (after: number): string =>
      `retry: 1000\n\n${logged
        .filter((event) => event.seq > after)
        .map((event) => `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
        .join('')}`;
    expect(fromStart).toBe(expected(0));
    expect(resumed).toBe(expected(2));
  });

  it('wakes every follower of a turn followed by more than one slice, each event once and in order', async () => {
    const { agent, handler, served } = await setup();
    const turnId = await submit(served);
    const control = await agent.nextTurn();
    const url = `${served.url}/turns/${turnId}/events`;
    // Over one slice of the feed's wake-up on each path, so every round yields in between.
    const overHttp = await Promise.all(Array.from({ length: 150 }, () => followOverHttp(url)));
    const overWeb = Array.from({ length: 150 }, () => followOverWeb(handler, url));
    for (let i = 0; i < 20; i++) await control.delta(`d${i} `);
    await control.end();
    const bodies = [...(await Promise.all(overHttp.map((answer) => answer.body))), ...(await Promise.all(overWeb))];
    const expected = Array.from({ length: 22 }, (_, i) => i + 1);
    for (const body of bodies) expect(frameIds(body)).toEqual(expected);
    expect(new Set(bodies).size).toBe(1);
  });

  it('wakes every follower when fewer of them than a slice write more than its bytes', async () => {
    const { agent, served } = await setup();
    const turnId = await submit(served);
    const control = await agent.nextTurn();
    const url = `${served.url}/turns/${turnId}/events`;
    // 12 followers, fewer than a slice's count, each writing ~100 KB per event: the slice ends on bytes first.
    const overHttp = await Promise.all(Array.from({ length: 12 }, () => followOverHttp(url)));
    for (let i = 0; i < 4; i++) await control.delta(`${i}`.repeat(100_000));
    await control.end();
    const bodies = await Promise.all(overHttp.map((answer) => answer.body));
    for (const body of bodies) expect(frameIds(body)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(bodies).size).toBe(1);
  });

  it('ends a follow body at once when its request was aborted before anyone read it', async () => {
    const { agent, handler, served } = await setup();
    const turnId = await submit(served);
    const control = await agent.nextTurn();
    await control.delta('one');
    const abort = new AbortController();
    const response = await handler(new Request(`${served.url}/turns/${turnId}/events`, { signal: abort.signal }));
    abort.abort();
    expect(await response.text()).toBe('');
    await control.end();
  });
});
