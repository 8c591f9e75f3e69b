/** The standalone-Redis stream waiter on its own, against a real redis-server. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStreamWaiter } from '../../../src/server/log/redis/stream-waiter.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';

let redis: RedisServer;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  for (const item of opened.reverse()) await item.close().catch(() => undefined);
  await redis?.stop();
});

function client(options: { keyPrefix?: string } = {}): Redis {
  const redisClient = new Redis(redis.url, options);
  opened.push({ close: async () => redisClient.disconnect() });
  return redisClient;
}

const never = (): AbortSignal => new AbortController().signal;

describe('stream waiter (one blocking connection for every follower)', () => {
  // A blocking read far longer than the test timeout: a follower that joins while it is
  // in flight is only ever served if the control-stream wake works.
  const BLOCK_FOREVER = 10 * 60 * 1000;

  it('re-issues the blocking read for a key that joins while it is in flight', async () => {
    // ioredis's own keyPrefix is applied to the keys and stripped from replies.
    const redisClient = client({ keyPrefix: 'app:' });
    const errors: unknown[] = [];
    const waiter = createStreamWaiter({ client: redisClient, wakeKey: 'w:1', blockMs: BLOCK_FOREVER, onError: (e) => errors.push(e) });
    opened.push(waiter);
    const first = waiter.wait('s:1', 0, never(), BLOCK_FOREVER);
    // Make sure the first read is blocked on the server before the second key joins.
    const probe = client();
    await expect.poll(async () => String(await probe.client('LIST')).includes('cmd=xread'), { interval: 10 }).toBe(true);
    const second = waiter.wait('s:2', 0, never(), BLOCK_FOREVER);
    await redisClient.xadd('s:2', '1-0', 'e', '{}');
    expect(await second).toBe(true);
    // A follower of an existing key asking from an earlier seq gets the entries already there.
    await redisClient.xadd('s:1', '1-0', 'e', '{}');
    await redisClient.xadd('s:1', '2-0', 'e', '{}');
    expect(await first).toBe(true);
    const late = waiter.wait('s:3', 0, never(), BLOCK_FOREVER);
    const behind = waiter.wait('s:1', 1, never(), BLOCK_FOREVER);
    expect(await behind).toBe(true);
    await redisClient.xadd('s:3', '5-0', 'e', '{}');
    expect(await late).toBe(true);
    expect(await probe.exists('app:s:1')).toBe(1);
    expect(errors).toEqual([]);
  });

  it('hands a waiter the entries after its seq that the waking read brought, so its reader need not read them again', async () => {
    const redisClient = client();
    const waiter = createStreamWaiter({ client: redisClient, wakeKey: 'w:entries', blockMs: BLOCK_FOREVER, onError: () => undefined });
    opened.push(waiter);
    await redisClient.xadd('e:1', '1-0', 'e', 'one');
    await redisClient.xadd('e:1', '2-0', 'e', 'two');
    await redisClient.xadd('e:1', '3-0', 'e', 'three');
    const brought: [string, string[]][][] = [];
    // Already there: the first read answers at once, with what follows seq 1 only.
    expect(await waiter.wait('e:1', 1, never(), BLOCK_FOREVER, (entries) => brought.push(entries))).toBe(true);
    expect(brought).toEqual([
      [
        ['2-0', ['e', 'two']],
        ['3-0', ['e', 'three']],
      ],
    ]);
    // Appended while it waits: the wake carries the new entry.
    const next = waiter.wait('e:1', 3, never(), BLOCK_FOREVER, (entries) => brought.push(entries));
    await redisClient.xadd('e:1', '4-0', 'e', 'four');
    expect(await next).toBe(true);
    expect(brought[1]).toEqual([['4-0', ['e', 'four']]]);
  });

  it('settles false on abort, on timeout and on close, and never rejects', async () => {
    const redisClient = client();
    const waiter = createStreamWaiter({ client: redisClient, wakeKey: 'w:2', blockMs: BLOCK_FOREVER, onError: () => undefined });
    const controller = new AbortController();
    const aborted = waiter.wait('q:1', 0, controller.signal, BLOCK_FOREVER);
    const timedOut = waiter.wait('q:2', 0, never(), 30);
    const pending = waiter.wait('q:3', 0, never(), BLOCK_FOREVER);
    controller.abort();
    expect(await aborted).toBe(false);
    expect(await timedOut).toBe(false);
    await waiter.close();
    expect(await pending).toBe(false);
    expect(await waiter.wait('q:4', 0, never(), BLOCK_FOREVER)).toBe(false);
  });

  it('keeps a just-woken key in its next read, so the follower coming back costs no control write', async () => {
    const redisClient = client();
    const errors: unknown[] = [];
    const waiter = createStreamWaiter({ client: redisClient, wakeKey: 'w:3', blockMs: BLOCK_FOREVER, onError: (e) => errors.push(e) });
    opened.push(waiter);
    const probe = client();
    const blocked = async (): Promise<boolean> => /flags=b/.test(String(await probe.client('LIST')));
    // Another follower keeps a read in flight throughout.
    const other = waiter.wait('l:other', 0, never(), BLOCK_FOREVER);
    await expect.poll(blocked, { interval: 10 }).toBe(true);
    const first = waiter.wait('l:1', 0, never(), BLOCK_FOREVER);
    await redisClient.xadd('l:1', '1-0', 'e', '{}');
    expect(await first).toBe(true);
    // Joining the read in flight took one control write.
    expect(await probe.xlen('w:3')).toBe(1);
    await expect.poll(blocked, { interval: 10 }).toBe(true);
    // Back after reading seq 1: the blocked read already covers it.
    const again = waiter.wait('l:1', 1, never(), BLOCK_FOREVER);
    await redisClient.xadd('l:1', '2-0', 'e', '{}');
    expect(await again).toBe(true);
    expect(await probe.xlen('w:3')).toBe(1);
    await redisClient.xadd('l:other', '1-0', 'e', '{}');
    expect(await other).toBe(true);
    expect(errors).toEqual([]);
  });
});
