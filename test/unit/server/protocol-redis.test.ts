/**
 * The whole protocol suite (docs/protocol.md sections 1–5 over real HTTP) against the Redis
 * turn log on a real redis-server, plus section 6 (retention) on Redis's own clock:
 * the suite's retention tests move a fake clock, which Redis TTLs do not follow.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { errorBodySchema, listAnswerSchema } from '../../../src/protocol/schemas.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';
import { newKey, startTestServer, submitMessage, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';
import { Redis } from 'ioredis';
import { defineBoundsSuite } from './bounds-suite.js';
import { defineDeliverySuite } from './delivery-suite.js';
import { defineContinuationSuite } from './continuation-suite.js';
import { defineProtocolSuite, type MakeProtocolLog } from './protocol-suite.js';
import { createFollower } from './seq-follower.js';

let redis: RedisServer;
let logs = 0;

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  await redis?.stop();
});

/** Each log gets its own key prefix: tests share one Redis but never each other's keys. */
function redisLog(options: { now?: () => number; retentionMs?: number } = {}): TurnLog {
  logs++;
  return createRedisTurnLog({ url: redis.url, keyPrefix: `protocol${logs}:`, ...options });
}

// Retention runs on Redis's own clock below: the suites' fake clock does not move Redis TTLs.
const makeLog: MakeProtocolLog = async ({ now }) => {
  const log = redisLog({ now });
  return { log, cleanup: () => log.close() };
};
defineProtocolSuite('redis turn log', makeLog, { retention: false });
defineBoundsSuite('redis turn log', makeLog, { retention: false });
defineContinuationSuite('redis turn log', makeLog);

describe('protocol (redis turn log) 6. retention on the Redis clock', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function serverWith(retentionMs: number, agent = controlledAgent()): Promise<{ server: TestServer; agent: ReturnType<typeof controlledAgent> }> {
    const log = redisLog({ retentionMs });
    cleanups.push(() => log.close());
    const server = await startTestServer({ store: log, agent: agent.agent });
    cleanups.push(() => server.close());
    return { server, agent };
  }

  async function expectCode(response: Response, status: number, code: string): Promise<void> {
    expect(response.status).toBe(status);
    expect(errorBodySchema.parse(await response.json()).error.code).toBe(code);
  }

  it('keeps an ended turn and its key for the retention period, then answers 410 turn_expired everywhere', async () => {
    const { server, agent } = await serverWith(400);
    const key = newKey();
    const answer = await submitMessage(server.baseUrl, 'conv-r', 'keep me', key);
    await (await agent.nextTurn()).end();
    await waitForTurnEnd(server.log, answer.turnId);
    // Within retention: replay works and the key replays the same turn.
    expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(200);
    expect((await submitMessage(server.baseUrl, 'conv-r', 'keep me', key)).turnId).toBe(answer.turnId);
    await expect.poll(async () => (await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status, { timeout: 10_000, interval: 50 }).toBe(410);
    await expectCode(await fetch(`${server.baseUrl}/turns/${answer.turnId}`), 410, 'turn_expired');
    await expectCode(await fetch(`${server.baseUrl}/turns/${answer.turnId}/events`), 410, 'turn_expired');
    await expectCode(await fetch(`${server.baseUrl}/turns/${answer.turnId}/events`, { headers: { 'last-event-id': '1' } }), 410, 'turn_expired');
    await expectCode(await fetch(`${server.baseUrl}/turns/${answer.turnId}/cancel`, { method: 'POST' }), 410, 'turn_expired');
    expect(listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-r/turns`)).json()).turns).toEqual([]);
    // The key went with the turn: the same submission now makes a new turn.
    const again = await submitMessage(server.baseUrl, 'conv-r', 'keep me', key);
    expect(again.turnId).not.toBe(answer.turnId);
    // After the tombstone, the id is simply unknown.
    await expect.poll(async () => (await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status, { timeout: 10_000, interval: 50 }).toBe(404);
  });

  it("answers 404 for another principal's expired turn on every route, 410 to its owner", async () => {
    // The tombstone lives one retention after the record: long enough for the eight requests below on a busy machine.
    const log = redisLog({ retentionMs: 1000 });
    cleanups.push(() => log.close());
    const agent = controlledAgent();
    const server = await startTestServer({ store: log, agent: agent.agent, authorize: (request) => request.headers.get('x-user') ?? 'nobody' });
    cleanups.push(() => server.close());
    const created = await fetch(`${server.baseUrl}/conversations/conv-p/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newKey(), 'x-user': 'alice' },
      body: JSON.stringify({ content: 'mine' }),
    });
    const { turnId } = (await created.json()) as { turnId: string };
    await (await agent.nextTurn()).end();
    await waitForTurnEnd(server.log, turnId);
    const headers = (user: string, extra: Record<string, string> = {}): Record<string, string> => ({ 'x-user': user, ...extra });
    await expect.poll(async () => (await fetch(`${server.baseUrl}/turns/${turnId}`, { headers: headers('alice') })).status, { timeout: 10_000, interval: 50 }).toBe(410);
    for (const user of ['bob', 'alice']) {
      const [status, code] = user === 'bob' ? [404, 'turn_not_found'] : [410, 'turn_expired'];
      await expectCode(await fetch(`${server.baseUrl}/turns/${turnId}`, { headers: headers(user) }), status, code);
      await expectCode(await fetch(`${server.baseUrl}/turns/${turnId}/events`, { headers: headers(user) }), status, code);
      await expectCode(await fetch(`${server.baseUrl}/turns/${turnId}/events`, { headers: headers(user, { 'last-event-id': '1' }) }), status, code);
      await expectCode(await fetch(`${server.baseUrl}/turns/${turnId}/cancel`, { method: 'POST', headers: headers(user) }), status, code);
    }
  });

  it('never expires a live turn, however long it stays silent', async () => {
    const { server, agent } = await serverWith(300);
    const answer = await submitMessage(server.baseUrl, 'conv-l', 'slow');
    const control = await agent.nextTurn();
    await control.delta('slow');
    // Several retention periods of silence, waited on the log itself.
    await server.log.waitForEvents(answer.turnId, 2, { signal: new AbortController().signal, timeoutMs: 1200 });
    expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(200);
    await control.end();
    await waitForTurnEnd(server.log, answer.turnId);
    expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(200);
    await expect.poll(async () => (await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status, { timeout: 10_000, interval: 50 }).toBe(410);
  });
});

// Sections 10 and 11; the listing's work is counted in commands the Redis server processed.
defineDeliverySuite('redis turn log', async ({ now }) => {
  const log = redisLog({ now });
  const admin = new Redis(redis.url);
  // Reads and index commands only: lease renewals (scripts) and follower wake-ups of other tests' logs run on their own timers.
  const counted = /^cmdstat_(zrevrangebyscore|zremrangebyscore|zrem|zadd|hgetall|hmget|exists|get|multi|exec|xrange|xrevrange):calls=(\d+)/gm;
  const work = async (): Promise<number> => [...(await admin.info('commandstats')).matchAll(counted)].reduce((sum, match) => sum + Number(match[2]), 0);
  return {
    log,
    work,
    cleanup: async () => {
      admin.disconnect();
      await log.close();
    },
  };
});

describe('following a live turn on Redis', () => {
  it('costs no command per event on the instance producing the turn, and only the shared XREAD on another one', async () => {
    // A Redis of its own: nothing else's commands in the counts.
    const own = await startRedisServer();
    const producing = createRedisTurnLog({ url: own.url });
    const other = createRedisTurnLog({ url: own.url });
    const agent = controlledAgent();
    const server = await startTestServer({ store: producing, agent: agent.agent });
    const otherServer = await startTestServer({ store: other, agent: agent.agent });
    const admin = new Redis(own.url);
    try {
      const calls = async (command: string): Promise<number> =>
        Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await admin.info('commandstats'))?.[1] ?? 0);
      const answer = await submitMessage(server.baseUrl, 'conv-cost', 'follow me');
      const control = await agent.nextTurn();
      const here = [createFollower(answer.turnId), createFollower(answer.turnId), createFollower(answer.turnId)];
      const there = [createFollower(answer.turnId), createFollower(answer.turnId), createFollower(answer.turnId)];
      const followers = [...here, ...there];
      const following = [...here.map((follower) => follower.follow(server.baseUrl)), ...there.map((follower) => follower.follow(otherServer.baseUrl))];
      await control.delta('first');
      await Promise.all(followers.map((follower) => follower.until((events) => events.length >= 2)));
      const [xrangeBefore, xreadBefore] = [await calls('xrange'), await calls('xread')];
      const deltas = 20;
      // One delta at a time, each seen by every follower before the next: a wake per delta on each instance.
      for (let n = 0; n < deltas; n++) {
        await control.delta(`d${n} `);
        await Promise.all(followers.map((follower) => follower.until((events) => events.length >= 3 + n)));
      }
      // Nobody reads a wake's events again (XRANGE): the append here, the XREAD there, brought them along.
      expect((await calls('xrange')) - xrangeBefore).toBeLessThanOrEqual(2);
      // One XREAD per wake, all of them the other instance's: the producing one is woken by its own appends.
      const xreads = (await calls('xread')) - xreadBefore;
      expect(xreads).toBeGreaterThanOrEqual(deltas);
      expect(xreads).toBeLessThanOrEqual(2 * deltas + 2);
      await otherServer.close();
      const [xreadsAlone, xrangesAlone] = [await calls('xread'), await calls('xrange')];
      for (let n = deltas; n < 2 * deltas; n++) {
        await control.delta(`d${n} `);
        await Promise.all(here.map((follower) => follower.until((events) => events.length >= 3 + n)));
      }
      expect((await calls('xread')) - xreadsAlone).toBeLessThanOrEqual(1);
      expect((await calls('xrange')) - xrangesAlone).toBeLessThanOrEqual(1);
      await control.end();
      expect(await Promise.all(following.slice(0, 3))).toEqual(['ended', 'ended', 'ended']);
      for (const follower of here) expect(follower.applied.map((event) => event.seq)).toEqual(Array.from({ length: 2 * deltas + 3 }, (_, i) => i + 1));
      for (const follower of there) expect(follower.applied.map((event) => event.seq).slice(0, deltas + 2)).toEqual(Array.from({ length: deltas + 2 }, (_, i) => i + 1));
    } finally {
      admin.disconnect();
      await server.close();
      await otherServer.close();
      await producing.close();
      await other.close();
      await own.stop();
    }
  });
});
