/**
 * The Redis turn log when a producer goes away, against a real redis-server: a turn whose
 * producer lost Redis, died, or released it ends producer_lost exactly once; a lease is
 * renewed from the turn's creation; close gives leases up; retention expires a turn.
 */
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';
import { redisUrl, newPrefix, openLog, client, newTurn, endOf, never, useRedis } from './redis-log-rig.js';

useRedis();

describe('redis turn log: producer loss and retention', () => {
  it('ends a turn whose producer instance lost Redis as failed/producer_lost, exactly once, with the text hash', async () => {
    const keyPrefix = newPrefix();
    const producerClient = client();
    const producer = openLog({ keyPrefix, client: producerClient, producerLeaseMs: 300 });
    const b = openLog({ keyPrefix, producerLeaseMs: 300 });
    const c = openLog({ keyPrefix, producerLeaseMs: 300 });
    const turn = await newTurn(producer.log);
    await producer.log.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    await producer.log.append(turn.id, { type: 'delta', text: 'partial ' });
    await producer.log.append(turn.id, { type: 'delta', text: 'answer' });

    // A live producer keeps its turn across many lease periods.
    await b.log.waitForEvents(turn.id, 3, { signal: never(), timeoutMs: 1000 });
    expect(await b.log.getTurn(turn.id)).toMatchObject({ status: 'streaming', lastSeq: 3 });

    // The instance "dies": its connection goes, its renewals fail.
    producerClient.disconnect();
    // Followers on two other instances notice the lapsed lease at the same time.
    await Promise.all([
      b.log.waitForEvents(turn.id, 3, { signal: never(), timeoutMs: 30_000 }),
      c.log.waitForEvents(turn.id, 3, { signal: never(), timeoutMs: 30_000 }),
      expect.poll(() => c.log.getTurn(turn.id), { timeout: 10_000, interval: 50 }).toMatchObject({ status: 'failed' }),
    ]);
    const { events } = await b.log.read(turn.id, 0, 100);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    const end = events[3] as TurnEvent & { type: 'turn.end' };
    expect(end).toMatchObject({
      type: 'turn.end',
      status: 'failed',
      error: { code: 'producer_lost' },
      textLength: 'partial answer'.length,
      textSha256: await sha256Hex('partial answer'),
    });
    expect(turnEventSchema.safeParse(end).success).toBe(true);
    // The instance that ended it says so; exactly one did.
    const reports = [...b.errors, ...c.errors].filter((error) => String(error).includes('producer_lost'));
    expect(reports).toHaveLength(1);
    expect(producer.errors.length).toBeGreaterThan(0);
  });

  it('ends a turn whose producer died before turn.start with turn.start then turn.end', async () => {
    const keyPrefix = newPrefix();
    const producerClient = client();
    const producer = openLog({ keyPrefix, client: producerClient, producerLeaseMs: 200 });
    const reader = openLog({ keyPrefix, producerLeaseMs: 200 });
    const turn = await newTurn(producer.log);
    producerClient.disconnect();
    await expect.poll(() => reader.log.getTurn(turn.id), { timeout: 10_000, interval: 50 }).toMatchObject({ status: 'failed', lastSeq: 2 });
    const { events } = await reader.log.read(turn.id, 0, 10);
    expect(events.map((event) => event.type)).toEqual(['turn.start', 'turn.end']);
    expect(events[0]).toMatchObject({ seq: 1, messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    expect(events[1]).toMatchObject({ seq: 2, status: 'failed', error: { code: 'producer_lost' }, textLength: 0 });
    // The listing shows it ended too.
    expect((await reader.log.listTurns('conv_1', 'alice', 10)).map((t) => [t.id, t.status])).toEqual([[turn.id, 'failed']]);
  });

  it('renews a lease from the moment the turn is created: a first append slower than many leases keeps the turn', async () => {
    const keyPrefix = newPrefix();
    const creator = openLog({ keyPrefix, producerLeaseMs: 150 });
    const reader = openLog({ keyPrefix, producerLeaseMs: 150 });
    const turn = await newTurn(creator.log);
    // Nothing logged for ten leases; the reader keeps looking (each look would end a lapsed turn).
    for (let looks = 0; looks < 10; looks++) {
      await reader.log.waitForEvents(turn.id, 0, { signal: never(), timeoutMs: 150 });
      expect(await reader.log.getTurn(turn.id)).toMatchObject({ status: 'pending', lastSeq: 0 });
    }
    await creator.log.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    await creator.log.append(turn.id, await endOf(''));
    expect(await reader.log.getTurn(turn.id)).toMatchObject({ status: 'complete', lastSeq: 2 });
    expect(creator.errors).toEqual([]);
  });

  it('ends a turn released by its creator (a submission that failed after createTurn) as producer_lost at the next look', async () => {
    const keyPrefix = newPrefix();
    const creator = openLog({ keyPrefix, producerLeaseMs: 60_000 });
    const reader = openLog({ keyPrefix, producerLeaseMs: 60_000 });
    const turn = await newTurn(creator.log);
    await creator.log.release?.(turn.id);
    // No waiting for the 60 s lease.
    expect(await reader.log.getTurn(turn.id)).toMatchObject({ status: 'failed', lastSeq: 2 });
  });

  it('gives up its leases on close, so another instance ends those turns at its next look', async () => {
    const keyPrefix = newPrefix();
    const producer = createRedisTurnLog({ url: redisUrl(), keyPrefix, producerLeaseMs: 60_000, onError: () => undefined });
    const reader = openLog({ keyPrefix, producerLeaseMs: 60_000 });
    const turn = await newTurn(producer);
    await producer.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: 'conv_1', createdAt: turn.createdAt });
    expect(await reader.log.getTurn(turn.id)).toMatchObject({ status: 'streaming' });
    await producer.close();
    // No waiting for a 60 s lease: the lease is gone now.
    expect(await reader.log.getTurn(turn.id)).toMatchObject({ status: 'failed', lastSeq: 2 });
    await expect(producer.getTurn(turn.id)).rejects.toThrow(/closed/);
  });

  it('expires a turn after retention: expired (with its principal) from the tombstone, then unknown', async () => {
    const keyPrefix = newPrefix();
    const { log } = openLog({ keyPrefix, retentionMs: 150 });
    const turn = await newTurn(log, { conversationId: 'conv_exp' });
    await log.completeIdempotency('alice', 'key-expiring-0000001', {
      fingerprint: 'f',
      state: 'done',
      turnId: turn.id,
      messageId: turn.messageId,
      conversationId: 'conv_exp',
      createdAt: turn.createdAt,
    });
    await log.append(turn.id, await endOf(''));
    expect(await log.getTurn(turn.id)).toMatchObject({ status: 'complete' });
    await expect.poll(() => log.getTurn(turn.id), { timeout: 5000, interval: 20 }).toEqual({ expired: true, principal: 'alice' });
    expect(await log.read(turn.id, 0, 10)).toEqual({ events: [], hasMore: false });
    expect(await log.listTurns('conv_exp', 'alice', 10)).toEqual([]);
    expect(await log.getIdempotency('alice', 'key-expiring-0000001')).toBeUndefined();
    await expect.poll(() => log.getTurn(turn.id), { timeout: 5000, interval: 20 }).toBeUndefined();
    // Nothing of the turn is left behind in Redis.
    expect(await client().keys(`${keyPrefix}*`)).toEqual([]);
  });

});
