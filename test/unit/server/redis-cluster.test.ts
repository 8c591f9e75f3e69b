/**
 * The Redis turn log on a real 3-master Redis Cluster (one master has a replica): the
 * shared-store suite (cross-instance stream, resume, replay, idempotency, list, cancel,
 * producer loss), the protocol and bounds suites, what makes it cluster-safe (a turn's keys in one slot, the conversation
 * index and idempotency records in their own, half-done steps invisible or repaired),
 * the ways to connect, and last a failover: the master holding a live turn is stopped
 * and the turn still ends with every event once.
 */
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { submitAnswerSchema } from '../../../src/protocol/schemas.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent, splitText, textAgent } from '../../fixtures/agents.js';
import { startRedisCluster, type RedisCluster } from '../../fixtures/redis-cluster.js';
import { replayAll, startTestServer, submitMessage, type TestServer } from '../../fixtures/server.js';
import { defineBoundsSuite } from './bounds-suite.js';
import { defineDeliverySuite } from './delivery-suite.js';
import { defineContinuationSuite } from './continuation-suite.js';
import { defineProtocolSuite } from './protocol-suite.js';
import { defineSharedStoreSuite } from './redis-shared-store-suite.js';
import { createFollower, expectIntact, oneToN, seqs } from './seq-follower.js';

let cluster: RedisCluster;
let admin: Cluster;
const cleanups: (() => Promise<void>)[] = [];
let prefixes = 0;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1 });
  admin = new Cluster(cluster.nodes.map(({ host, port }) => ({ host, port })));
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  admin?.disconnect();
  await cluster?.stop();
});

function newPrefix(): string {
  prefixes++;
  return `cl${prefixes}:`;
}

function openLog(options: { keyPrefix: string; now?: () => number }): TurnLog & { errors: unknown[] } {
  const errors: unknown[] = [];
  const log = createRedisTurnLog({ url: cluster.url, onError: (error) => errors.push(error), ...options });
  cleanups.push(() => log.close());
  return Object.assign(log, { errors });
}

async function slotOf(key: string): Promise<number> {
  return Number(await admin.call('CLUSTER', 'KEYSLOT', key));
}

/** The port of the master serving `slot` now. */
async function masterOf(slot: number): Promise<number> {
  const ranges = (await admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`slot ${slot} is not served`);
  return range[2][1];
}

defineSharedStoreSuite('Redis Cluster', () => cluster.url);

// The whole wire protocol and its 1.1 bounds over the cluster (retention runs on Redis's clock: protocol-redis.test.ts).
const clusterLog = async ({ now }: { now: () => number }) => {
  const log = createRedisTurnLog({ url: cluster.url, keyPrefix: newPrefix(), now });
  return { log, cleanup: () => log.close() };
};
defineProtocolSuite('redis cluster turn log', clusterLog, { retention: false });
defineBoundsSuite('redis cluster turn log', clusterLog, { retention: false });
// Receipts and the operator index over the cluster: the index's sets in slots of their own.
defineDeliverySuite('redis cluster turn log', clusterLog);
defineContinuationSuite('redis cluster turn log', clusterLog);

describe('the turn log on Redis Cluster', () => {
  it('keeps a turn in one slot, its index and idempotency record in others, and spreads turns over the masters', async () => {
    const keyPrefix = newPrefix();
    const log = openLog({ keyPrefix });
    const createdAt = new Date().toISOString();
    const ids = Array.from({ length: 24 }, (_, i) => `spread_${i}`);
    for (const id of ids) await log.createTurn({ id, conversationId: 'conv_s', messageId: `m_${id}`, principal: 'alice', content: 'hi', createdAt });
    await log.completeIdempotency('alice', 'spread-key-000000001', { fingerprint: 'f', state: 'done', turnId: 'spread_0', createdAt });
    const turnKeys = ['', ':gone', ':lease'].map((suffix) => `${keyPrefix}turn:{spread_0}${suffix}`);
    expect(await Promise.all(turnKeys.map((key) => admin.exists(key)))).toEqual([1, 1, 1]);
    const turnSlots = new Set(await Promise.all(turnKeys.map(slotOf)));
    expect(turnSlots.size).toBe(1);
    const [turnSlot] = [...turnSlots];
    // The steps that touch the index and the record really are cross-slot here.
    expect(await slotOf(`${keyPrefix}conv:alice:conv_s`)).not.toBe(turnSlot);
    expect(await slotOf(`${keyPrefix}idem:alice:spread-key-000000001`)).not.toBe(turnSlot);
    const masters = new Set(await Promise.all(ids.map(async (id) => masterOf(await slotOf(`${keyPrefix}turn:{${id}}`)))));
    expect(masters.size).toBe(3);
    expect((await log.listTurns('conv_s', 'alice', 100)).map((turn) => turn.id)).toEqual([...ids].reverse());
  });

  it('never lists an index entry whose turn was not created, and drops it once it is older than any turn could be', async () => {
    const keyPrefix = newPrefix();
    let clock = Date.now();
    const log = openLog({ keyPrefix, now: () => clock });
    const createdAt = new Date(clock).toISOString();
    await log.createTurn({ id: 'real_1', conversationId: 'conv_h', messageId: 'm1', principal: 'alice', content: 'hi', createdAt });
    // The first step of a create whose instance died before the second.
    await admin.zadd(`${keyPrefix}conv:alice:conv_h`, String(clock + 1), 'half_1');
    expect((await log.listTurns('conv_h', 'alice', 10)).map((turn) => turn.id)).toEqual(['real_1']);
    expect(await admin.zrange(`${keyPrefix}conv:alice:conv_h`, '0', '-1')).toEqual(['real_1', 'half_1']);
    // Two retention periods and a lease later no turn could still be behind it.
    clock += 2 * 24 * 60 * 60 * 1000 + 15_000 + 60_000;
    expect((await log.listTurns('conv_h', 'alice', 10)).map((turn) => turn.id)).toEqual(['real_1']);
    expect(await admin.zrange(`${keyPrefix}conv:alice:conv_h`, '0', '-1')).toEqual(['real_1']);
  });

  it('replaces an idempotency record that outlived its turn, exactly once under concurrent submits', async () => {
    const keyPrefix = newPrefix();
    const a = openLog({ keyPrefix });
    const b = openLog({ keyPrefix });
    const createdAt = new Date().toISOString();
    // A done record whose turn's keys are gone (its retention ran out a moment earlier).
    const stale = { fingerprint: 'f', state: 'done' as const, turnId: 'expired_turn', messageId: 'm', conversationId: 'c', createdAt };
    await admin.set(`${keyPrefix}idem:alice:stale-key-0000000001`, JSON.stringify(stale), 'PX', 60_000);
    const fresh = (who: string) => ({ fingerprint: who, state: 'in_flight' as const, createdAt });
    const results = await Promise.all([
      a.putIdempotencyIfAbsent('alice', 'stale-key-0000000001', fresh('A')),
      b.putIdempotencyIfAbsent('alice', 'stale-key-0000000001', fresh('B')),
    ]);
    expect(results.filter((result) => result === undefined)).toHaveLength(1);
    const winner = results[0] === undefined ? 'A' : 'B';
    expect(results.find((result) => result !== undefined)).toEqual(fresh(winner));
    expect(await a.getIdempotency('alice', 'stale-key-0000000001')).toEqual(fresh(winner));
    // A record whose turn exists is never replaced.
    await a.createTurn({ id: 'live_1', conversationId: 'c', messageId: 'm', principal: 'alice', content: 'hi', createdAt });
    const done = { ...stale, turnId: 'live_1' };
    await a.completeIdempotency('alice', 'live-key-00000000001', done);
    expect(await b.putIdempotencyIfAbsent('alice', 'live-key-00000000001', fresh('B'))).toEqual(done);
  });

  it('connects through a caller\'s ioredis Cluster (its keyPrefix too) and through the `cluster` option', async () => {
    const keyPrefix = newPrefix();
    const nodes = cluster.nodes.map(({ host, port }) => ({ host, port }));
    const own = new Cluster(nodes, { keyPrefix: 'app:' });
    cleanups.push(async () => own.disconnect());
    const producer = createRedisTurnLog({ client: own, keyPrefix });
    cleanups.push(() => producer.close());
    const follower = createRedisTurnLog({ cluster: { nodes, options: { keyPrefix: 'app:' } }, keyPrefix });
    cleanups.push(() => follower.close());
    const createdAt = new Date().toISOString();
    const turn = await producer.createTurn({ id: 'prefixed_1', conversationId: 'c', messageId: 'm', principal: 'alice', content: 'hi', createdAt });
    // Woken through the sharded channel under the same ioredis prefix.
    const woken = follower.waitForEvents(turn.id, 0, { signal: new AbortController().signal, timeoutMs: 60_000 });
    await producer.append(turn.id, { type: 'turn.start', messageId: 'm', conversationId: 'c', createdAt });
    await woken;
    expect(await follower.getTurn(turn.id)).toMatchObject({ status: 'streaming', lastSeq: 1 });
    expect(await admin.exists(`app:${keyPrefix}turn:{prefixed_1}`)).toBe(1);
    expect(() => createRedisTurnLog({ url: 'redis-cluster://no-port' })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => createRedisTurnLog({ url: cluster.url, keyPrefix: 'a{b}:' })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});

describe('a master failing over mid-turn', () => {
  // The turn.end append also moves the turn in the operator index, whose sets sit on other masters: those steps ride out
  // the failover like the append itself, or the turn would end store_failed.
  it('ends the turn complete with every event once, its follower on another instance woken through the new master', async () => {
    const keyPrefix = newPrefix();
    const agent = controlledAgent();
    // Lease and heartbeat far beyond the test's timeout: neither the lease check nor a
    // heartbeat's look at the log may stand in for a wake-up lost in the failover.
    const start = async (agentOf: Agent): Promise<TestServer> => {
      const store = createRedisTurnLog({ url: cluster.url, keyPrefix, producerLeaseMs: 600_000, onError: () => undefined });
      cleanups.push(() => store.close());
      const server = await startTestServer({ store, agent: agentOf, heartbeatMs: 600_000, onError: () => undefined });
      cleanups.push(() => server.close());
      return server;
    };
    const a = await start(agent.agent);
    const b = await start(textAgent('unused'));
    const failing = cluster.nodes.find((node) => node.role === 'master' && cluster.nodes.some((other) => other.replicaOf === node.port));
    if (!failing) throw new Error('the cluster has no master with a replica');

    // Submit until a turn lands on the master that will fail; end the others at once.
    let turnId = '';
    let control: Awaited<ReturnType<typeof agent.nextTurn>> | undefined;
    for (let attempt = 0; !control; attempt++) {
      if (attempt === 30) throw new Error('no turn landed on the failing master');
      const answer = submitAnswerSchema.parse(await submitMessage(a.baseUrl, 'conv-failover', `try ${attempt}`));
      const next = await agent.nextTurn();
      if ((await masterOf(await slotOf(`${keyPrefix}turn:{${answer.turnId}}`))) === failing.port) {
        turnId = answer.turnId;
        control = next;
      } else await next.end();
    }

    const parts = splitText('Through a failover: every delta once, in order, none lost. '.repeat(6), 5);
    const follower = createFollower(turnId);
    const following = (async () => {
      // Cut or refused while the slot has no master: resume from the last applied seq.
      while ((await follower.follow(b.baseUrl)) !== 'ended');
    })();
    const third = Math.floor(parts.length / 3);
    for (const part of parts.slice(0, third)) await control.delta(part);
    await follower.until((events) => events.length > third);

    const stopped = cluster.stopNode(failing.port);
    // Produced while the master shuts down, fails over and its replica takes the slot.
    for (const part of parts.slice(third)) await control.delta(part);
    await stopped;
    await control.end();
    await following;
    await cluster.untilHealthy();
    expect(await masterOf(await slotOf(`${keyPrefix}turn:{${turnId}}`))).not.toBe(failing.port);

    const replayed = await replayAll(b.baseUrl, turnId);
    expect(replayed.turn).toMatchObject({ status: 'complete', lastSeq: parts.length + 2 });
    await expectIntact(follower.applied, replayed.events);
    expect(seqs(replayed.events)).toEqual(oneToN(parts.length + 2));
    expect(follower.applied.filter((event) => event.type === 'delta').map((event) => (event as { text: string }).text)).toEqual(parts);
    expect(follower.duplicates).toBe(0);
    expect(follower.gaps).toBe(0);
  });
});
