/**
 * The Redis turn log on its own, against a real redis-server: numbering, atomicity
 * across instances, cross-instance wake-ups, key prefixes, the idempotency ledger, listing
 * and cancel. Producer loss and retention: redis-producer-loss.test.ts. The HTTP protocol
 * over it: protocol-redis.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { turnEventSchema } from '../../../src/protocol/schemas.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';
import type { IdempotencyRecord } from '../../../src/server/log/turn-log.js';
import { redisUrl, newPrefix, openLog, client, newTurn, endOf, never, useRedis } from './redis-log-rig.js';

useRedis();

describe('redis turn log', () => {
  it('numbers events 1..N, pages them, and closes the log at turn.end', async () => {
    const { log } = openLog({ keyPrefix: newPrefix() });
    const turn = await newTurn(log);
    expect(turn.status).toBe('pending');
    const start = await log.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: turn.conversationId, createdAt: turn.createdAt });
    expect(start).toEqual({ turnId: turn.id, seq: 1, type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    const texts = ['Hel', 'lo ', '', '世界 🌍', '"quoted"\n'];
    for (const text of texts) await log.append(turn.id, { type: 'delta', text });
    await log.append(turn.id, { type: 'action', callId: 'c1', name: 'propose_personas', status: 'completed', output: [{ name: 'Ada' }] });
    const streaming = await log.getTurn(turn.id);
    expect(streaming).toMatchObject({ status: 'streaming', lastSeq: 7 });
    expect((streaming as { endedAt?: string }).endedAt).toBeUndefined();
    const end = await log.append(turn.id, await endOf(texts.join('')));
    expect(end.seq).toBe(8);

    const all = await log.read(turn.id, 0, 100);
    expect(all.hasMore).toBe(false);
    expect(all.events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const event of all.events) expect(turnEventSchema.safeParse(event).success).toBe(true);
    expect(all.events.filter((event) => event.type === 'delta').map((event) => (event as { text: string }).text)).toEqual(texts);

    expect(await log.read(turn.id, 2, 3)).toEqual({ events: all.events.slice(2, 5), hasMore: true });
    expect(await log.read(turn.id, 5, 3)).toEqual({ events: all.events.slice(5, 8), hasMore: false });
    expect(await log.read(turn.id, 8, 3)).toEqual({ events: [], hasMore: false });

    const ended = await log.getTurn(turn.id);
    expect(ended).toMatchObject({ status: 'complete', lastSeq: 8 });
    expect((ended as { endedAt?: string }).endedAt).toEqual(expect.any(String));
    await expect(log.append(turn.id, { type: 'delta', text: 'late' })).rejects.toThrow(/ended/);
    await expect(log.append('no_such_turn', { type: 'delta', text: 'x' })).rejects.toThrow(/unknown/);
    await expect(newTurn(log).then((t) => log.createTurn({ ...t, content: 'again' }))).rejects.toThrow(/exists/);
  });

  it('refuses to hand out a seq twice when Redis lost acknowledged appends, then lets the producer end the turn', async () => {
    const keyPrefix = newPrefix();
    const { log } = openLog({ keyPrefix });
    const turn = await newTurn(log);
    await log.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    for (const text of ['a', 'b', 'c']) await log.append(turn.id, { type: 'delta', text });
    // What a master failed over before replicating looks like: the last two appends are gone.
    const raw = client();
    const eventsKey = `${keyPrefix}turn:{${turn.id}}:events`;
    const kept = await raw.xrange(eventsKey, '-', '2-0');
    await raw.del(eventsKey);
    for (const [id, fields] of kept) await raw.xadd(eventsKey, id, ...fields);
    await raw.hset(`${keyPrefix}turn:{${turn.id}}`, 'lastSeq', '2');
    await expect(log.append(turn.id, { type: 'delta', text: 'd' })).rejects.toThrow(/lost events/);
    // The log holds 'd' at 3 (not at 5 as the producer meant); the producer's store-failure
    // path ends the turn on what the log holds, and that append goes through.
    const end = await log.append(turn.id, await endOf('ad'));
    expect(end.seq).toBe(4);
    const { events } = await log.read(turn.id, 0, 10);
    expect(events.map((event) => (event.type === 'delta' ? event.text : event.type))).toEqual(['turn.start', 'a', 'd', 'turn.end']);
  });

  it('assigns gap-free, unique seqs when two instances append to one turn at once', async () => {
    const keyPrefix = newPrefix();
    const a = openLog({ keyPrefix }).log;
    const b = openLog({ keyPrefix }).log;
    const turn = await newTurn(a);
    const appended = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).append(turn.id, { type: 'delta', text: String(i) })),
    );
    expect(appended.map((event) => event.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const read = await b.read(turn.id, 0, 1000);
    // What each append returned is exactly what readers get.
    expect(read.events).toEqual([...appended].sort((x, y) => x.seq - y.seq));
  });

  it('wakes a follower on another instance when an event is appended, and settles on timeout and abort', async () => {
    const keyPrefix = newPrefix();
    const producer = openLog({ keyPrefix }).log;
    const follower = openLog({ keyPrefix }).log;
    const turn = await newTurn(producer);

    // Already satisfied: resolves at once without blocking.
    await producer.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    await follower.waitForEvents(turn.id, 0, { signal: never(), timeoutMs: 60_000 });

    // Blocked follower, woken by an append on the other instance.
    const woken = follower.waitForEvents(turn.id, 1, { signal: never(), timeoutMs: 60_000 });
    await producer.append(turn.id, { type: 'delta', text: 'a' });
    await woken;
    expect((await follower.read(turn.id, 1, 10)).events.map((event) => event.seq)).toEqual([2]);

    // Abort settles it, and the follower keeps working afterwards.
    const controller = new AbortController();
    const aborted = follower.waitForEvents(turn.id, 2, { signal: controller.signal, timeoutMs: 60_000 });
    controller.abort();
    await aborted;

    // Timeout settles it with nothing new.
    await follower.waitForEvents(turn.id, 2, { signal: never(), timeoutMs: 50 });
    expect((await follower.getTurn(turn.id)) as { lastSeq: number }).toMatchObject({ lastSeq: 2, status: 'streaming' });

    // Turn end wakes it too.
    const atEnd = follower.waitForEvents(turn.id, 2, { signal: never(), timeoutMs: 60_000 });
    await producer.append(turn.id, await endOf('a'));
    await atEnd;
    // An ended turn never blocks.
    await follower.waitForEvents(turn.id, 3, { signal: never(), timeoutMs: 60_000 });
  });

  it('serves many followers of many turns on one blocking connection, each woken by its own turn', async () => {
    const keyPrefix = newPrefix();
    const producer = openLog({ keyPrefix }).log;
    const follower = openLog({ keyPrefix }).log;
    const turns = await Promise.all(Array.from({ length: 8 }, () => newTurn(producer)));
    const woke: string[] = [];
    // Followers join one after another, so most join while a blocking read is in flight.
    const waits: Promise<void>[] = [];
    for (const turn of turns) {
      for (let k = 0; k < 3; k++) {
        waits.push(follower.waitForEvents(turn.id, 0, { signal: never(), timeoutMs: 60_000 }).then(() => void woke.push(turn.id)));
        await Promise.resolve();
      }
    }
    // Only odd turns get an event: even ones must stay asleep.
    const odd = turns.filter((_, i) => i % 2 === 1);
    for (const turn of odd) await producer.append(turn.id, { type: 'delta', text: 'x' });
    await Promise.all(waits.filter((_, i) => Math.floor(i / 3) % 2 === 1));
    expect(new Set(woke)).toEqual(new Set(odd.map((turn) => turn.id)));
    expect(woke).toHaveLength(odd.length * 3);
    for (const turn of turns.filter((_, i) => i % 2 === 0)) await producer.append(turn.id, { type: 'delta', text: 'y' });
    await Promise.all(waits);
    expect(woke).toHaveLength(turns.length * 3);
  });

  it('works through a client with its own ioredis keyPrefix', async () => {
    const keyPrefix = newPrefix();
    const prefixed = client({ keyPrefix: 'app:' });
    const a = openLog({ keyPrefix, client: prefixed }).log;
    const b = openLog({ keyPrefix, client: client({ keyPrefix: 'app:' }) }).log;
    const turn = await newTurn(a);
    const woken = b.waitForEvents(turn.id, 0, { signal: never(), timeoutMs: 60_000 });
    await a.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    await woken;
    await a.completeIdempotency('alice', 'prefixed-key-00000001', {
      fingerprint: 'f',
      state: 'done',
      turnId: turn.id,
      messageId: turn.messageId,
      conversationId: 'conv_1',
      createdAt: turn.createdAt,
    });
    await a.append(turn.id, await endOf(''));
    expect(await b.getTurn(turn.id)).toMatchObject({ status: 'complete', lastSeq: 2 });
    expect((await b.listTurns('conv_1', 'alice', 10)).map((t) => t.id)).toEqual([turn.id]);
    const keys = await client().keys(`*${turn.id}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.startsWith(`app:${keyPrefix}`)).toBe(true);
    // The ended turn's idempotency key got the retention TTL through the same prefix.
    const ttl = await client().pttl(`app:${keyPrefix}idem:alice:prefixed-key-00000001`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(24 * 60 * 60 * 1000);
  });

  it('keeps exactly one idempotency record when two instances race for a key', async () => {
    const keyPrefix = newPrefix();
    const a = openLog({ keyPrefix }).log;
    const b = openLog({ keyPrefix }).log;
    const record = (fingerprint: string): IdempotencyRecord => ({ fingerprint, state: 'in_flight', createdAt: new Date().toISOString() });
    for (let round = 0; round < 20; round++) {
      const key = `race-key-${round}-000000000`;
      const results = await Promise.all([a.putIdempotencyIfAbsent('alice', key, record('A')), b.putIdempotencyIfAbsent('alice', key, record('B'))]);
      const winners = results.filter((result) => result === undefined);
      expect(winners).toHaveLength(1);
      const loser = results.find((result) => result !== undefined) as IdempotencyRecord;
      expect(['A', 'B']).toContain(loser.fingerprint);
      // The loser saw the winner's record, not its own.
      expect(loser.fingerprint).toBe(results[0] === undefined ? 'A' : 'B');
    }
    // Scoped by principal; principals with ':' cannot collide with others.
    expect(await a.putIdempotencyIfAbsent('bob', 'race-key-0-000000000', record('bob'))).toBeUndefined();
    expect(await a.putIdempotencyIfAbsent('x:y', 'key-colon-000000001', record('1'))).toBeUndefined();
    expect(await a.putIdempotencyIfAbsent('x', 'y:key-colon-000000001', record('2'))).toBeUndefined();
    const done: IdempotencyRecord = { fingerprint: 'A', state: 'done', turnId: 't', messageId: 'm', conversationId: 'c', createdAt: 'now' };
    await a.completeIdempotency('alice', 'race-key-0-000000000', done);
    expect(await b.getIdempotency('alice', 'race-key-0-000000000')).toEqual(done);
    await b.deleteIdempotency('alice', 'race-key-0-000000000');
    expect(await a.getIdempotency('alice', 'race-key-0-000000000')).toBeUndefined();
  });

  it('lists a conversation newest first by arrival, per principal, across instances', async () => {
    const keyPrefix = newPrefix();
    const a = openLog({ keyPrefix }).log;
    const b = openLog({ keyPrefix }).log;
    // Same millisecond for all: arrival order must still hold.
    const createdAt = '2026-01-01T00:00:00.000Z';
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await newTurn(i % 2 ? a : b, { conversationId: 'conv_l', createdAt })).id);
    await newTurn(a, { conversationId: 'conv_l', principal: 'mallory', createdAt });
    await newTurn(a, { conversationId: 'conv_other', createdAt });
    expect((await b.listTurns('conv_l', 'alice', 50)).map((turn) => turn.id)).toEqual([...ids].reverse());
    expect((await a.listTurns('conv_l', 'alice', 2)).map((turn) => turn.id)).toEqual([ids[4], ids[3]]);
    expect(await a.listTurns('conv_never', 'alice', 50)).toEqual([]);
    expect((await a.listTurns('conv_l', 'mallory', 50)).map((turn) => turn.principal)).toEqual(['mallory']);
  });

  it('carries a cancel request across instances and isolates key prefixes', async () => {
    const keyPrefix = newPrefix();
    const a = openLog({ keyPrefix }).log;
    const b = openLog({ keyPrefix }).log;
    const other = openLog({ keyPrefix: newPrefix() }).log;
    const turn = await newTurn(a);
    expect(await a.isCancelRequested(turn.id)).toBe(false);
    await b.requestCancel(turn.id);
    expect(await a.isCancelRequested(turn.id)).toBe(true);
    expect(await other.getTurn(turn.id)).toBeUndefined();
    expect(await other.isCancelRequested(turn.id)).toBe(false);
  });

  it('refuses bad options with invalid_argument', () => {
    expect(() => createRedisTurnLog({})).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    const redisClient = client();
    expect(() => createRedisTurnLog({ client: redisClient, url: redisUrl() })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => createRedisTurnLog({ url: redisUrl(), retentionMs: 0 })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => createRedisTurnLog({ url: redisUrl(), producerLeaseMs: 1.5 })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    const resp3 = new Redis(redisUrl(), { lazyConnect: true, replyMapping: 'resp3' });
    expect(() => createRedisTurnLog({ client: resp3 as unknown as Redis })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});
