/**
 * What the Redis turn log asks of Redis, counted on a redis-server of its own (INFO
 * commandstats): an append reads one entry and writes its entries, the record only at
 * the first append and the end; the instance producing a turn answers for it without a
 * read while it holds the lease, and reads Redis again once it cannot know.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { createRedisTurnLog, type RedisTurnLogOptions } from '../../../src/server/log/redis/index.js';
import type { NewTurnEvent, StoredTurn, TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';
import { startTestServer, submitMessage } from '../../fixtures/server.js';
import { createFollower } from './seq-follower.js';

let redis: RedisServer;
let admin: Redis;
const opened: { close(): Promise<void> }[] = [];
let prefixes = 0;
let turns = 0;

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
});

afterAll(async () => {
  for (const item of opened.reverse()) await item.close().catch(() => undefined);
  admin?.disconnect();
  await redis?.stop();
});

function openLog(options: Partial<RedisTurnLogOptions> & { keyPrefix: string }): TurnLog {
  const log = createRedisTurnLog({ ...(options.client ? {} : { url: redis.url }), onError: () => undefined, ...options });
  opened.push(log);
  return log;
}

/** Calls of each command so far, commands run by scripts included. */
async function calls(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const [, name, count] of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts[name as string] = Number(count);
  return counts;
}

async function callsDuring(work: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await calls();
  await work();
  const after = await calls();
  const grown: Record<string, number> = {};
  for (const [name, count] of Object.entries(after)) if (count !== (before[name] ?? 0)) grown[name] = count - (before[name] ?? 0);
  return grown;
}

function newTurn(log: TurnLog): Promise<StoredTurn> {
  turns++;
  return log.createTurn({
    id: `cost_${turns}_${Date.now().toString(36)}`,
    conversationId: 'conv_cost',
    messageId: `msg_${turns}`,
    principal: 'alice',
    content: 'hello',
    createdAt: new Date().toISOString(),
  });
}

const start = (turn: StoredTurn): NewTurnEvent => ({ type: 'turn.start', messageId: turn.messageId, conversationId: turn.conversationId, createdAt: turn.createdAt });
const end = async (text: string): Promise<NewTurnEvent> => ({ type: 'turn.end', status: 'complete', textLength: text.length, textSha256: await sha256Hex(text) });

describe('redis turn log command cost', () => {
  it('appends with one read and its entries per call, writing the record only at the first append and the end', async () => {
    let clock = Date.parse('2026-06-01T10:00:00.000Z');
    const keyPrefix = `cost${++prefixes}:`;
    const log = openLog({ keyPrefix, now: () => clock });
    const reader = openLog({ keyPrefix });
    const turn = await newTurn(log);
    const first = await callsDuring(() => log.appendMany!(turn.id, [start(turn), { type: 'delta', text: 'a' }]));
    expect(first).toMatchObject({ xadd: 2, hset: 1 });
    const live = await callsDuring(async () => {
      for (let n = 0; n < 10; n++) {
        clock += 1000;
        await log.appendMany!(turn.id, [
          { type: 'delta', text: 'b' },
          { type: 'delta', text: 'c' },
        ]);
      }
    });
    expect(live).toMatchObject({ evalsha: 10, xrevrange: 10, xadd: 20 });
    expect(live['hset']).toBeUndefined();
    expect(live['hmget']).toBeUndefined();
    // Readers elsewhere still see where the turn stands: lastSeq and updatedAt from the stream.
    expect(await reader.getTurn(turn.id)).toMatchObject({ status: 'streaming', lastSeq: 22, updatedAt: new Date(clock).toISOString() });
    expect((await reader.listTurns('conv_cost', 'alice', 5))[0]).toMatchObject({ id: turn.id, lastSeq: 22 });
    clock += 1000;
    await log.append(turn.id, await end('a' + 'bc'.repeat(10)));
    // The ended record holds the end itself, as before.
    expect(await admin.hmget(`${keyPrefix}turn:{${turn.id}}`, 'status', 'lastSeq', 'endedAt', 'updatedAt')).toEqual([
      'complete',
      '23',
      new Date(clock).toISOString(),
      new Date(clock).toISOString(),
    ]);
    expect(await reader.getTurn(turn.id)).toMatchObject({ status: 'complete', lastSeq: 23, endedAt: new Date(clock).toISOString() });
  });

  it('goes on numbering a turn whose entries were written before they carried their time', async () => {
    const keyPrefix = `cost${++prefixes}:`;
    const log = openLog({ keyPrefix });
    const turn = await newTurn(openLog({ keyPrefix }));
    // What the previous version left: entries without a time, the record holding lastSeq.
    await admin.xadd(`${keyPrefix}turn:{${turn.id}}:events`, '1-0', 'e', JSON.stringify(start(turn)), 'a', 'old-append');
    await admin.hset(`${keyPrefix}turn:{${turn.id}}`, 'lastSeq', '1', 'status', 'streaming');
    expect((await log.append(turn.id, { type: 'delta', text: 'x' })).seq).toBe(2);
    expect((await log.append(turn.id, { type: 'delta', text: 'y' })).seq).toBe(3);
    expect(await log.getTurn(turn.id)).toMatchObject({ status: 'streaming', lastSeq: 3 });
    expect((await log.append(turn.id, await end('xy'))).seq).toBe(4);
    await expect(log.append(turn.id, { type: 'delta', text: 'late' })).rejects.toThrow(/ended/);
  });

  it('answers for a turn it produces without reading Redis, and reads again once it ended or a connection was lost', async () => {
    const keyPrefix = `cost${++prefixes}:`;
    const producerClient = new Redis(redis.url);
    opened.push({ close: async () => producerClient.disconnect() });
    const producer = openLog({ keyPrefix, client: producerClient });
    const other = openLog({ keyPrefix });
    const turn = await newTurn(producer);
    await producer.appendMany!(turn.id, [start(turn), { type: 'delta', text: 'hi' }]);
    let known: unknown;
    const looks = await callsDuring(async () => {
      for (let n = 0; n < 5; n++) known = await producer.getTurn(turn.id);
    });
    expect(looks['hgetall']).toBeUndefined();
    // Exactly what Redis holds.
    expect(known).toEqual(await other.getTurn(turn.id));

    // Written behind the producer's back, then its connection is lost: it asks Redis again.
    await admin.xadd(`${keyPrefix}turn:{${turn.id}}:events`, '3-0', 'e', JSON.stringify({ type: 'delta', text: '!' }), 'a', 'x', 't', new Date().toISOString());
    const reconnected = new Promise((resolve) => producerClient.once('ready', resolve));
    producerClient.disconnect(true);
    await reconnected;
    expect(await producer.getTurn(turn.id)).toMatchObject({ lastSeq: 3 });

    // Once ended it is Redis's to say: a receipt recorded elsewhere shows on the producer.
    const ended = await producer.append(turn.id, await end('hi!'));
    await other.recordDelivery!(turn.id, { seq: ended.seq, textSha256: await sha256Hex('hi!') }, new Date().toISOString());
    expect(await producer.getTurn(turn.id)).toMatchObject({ status: 'complete', delivery: { state: 'delivered' } });
  });

  it('costs no read per follower that joins a live turn on the instance producing it', async () => {
    const keyPrefix = `cost${++prefixes}:`;
    const log = openLog({ keyPrefix });
    const agent = controlledAgent();
    const server = await startTestServer({ store: log, agent: agent.agent });
    opened.push(server);
    const answer = await submitMessage(server.baseUrl, 'conv-cost', 'follow me');
    const control = await agent.nextTurn();
    await control.delta('first');
    const first = createFollower(answer.turnId);
    const following = [first.follow(server.baseUrl)];
    await first.until((events) => events.length >= 2);
    const followers = Array.from({ length: 10 }, () => createFollower(answer.turnId));
    const joins = await callsDuring(async () => {
      following.push(...followers.map((follower) => follower.follow(server.baseUrl)));
      await Promise.all(followers.map((follower) => follower.until((events) => events.length >= 2)));
    });
    expect(joins['hgetall']).toBeUndefined();
    await control.end();
    expect(await Promise.all(following)).toEqual(Array.from({ length: 11 }, () => 'ended'));
  });
});
