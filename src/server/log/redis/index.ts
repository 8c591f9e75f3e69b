import { RedisTurnLog } from './log.js';
import type { RedisTurnLogOptions } from './options.js';
import type { TurnLog } from '../turn-log.js';

export type { RedisTurnLogOptions } from './options.js';
export type { RedisClient } from './connection.js';

/**
 * A {@link TurnLog} in Redis, shared by every server instance that points at the same
 * Redis or Redis Cluster: a client that reconnects through a load balancer to another
 * instance resumes and replays the same turn there. No sticky sessions needed.
 *
 * Layout (prefix `lifeline:` by default): per turn a hash `turn:{id}` (the record), a
 * stream `turn:{id}:events` whose entry ids are `<seq>-0`, a producer lease
 * `turn:{id}:lease`, a cancel flag `turn:{id}:cancel` and a tombstone `turn:{id}:gone`;
 * per principal and conversation a sorted set `conv:<principal>:<conversationId>`; per
 * idempotency key a string `idem:<principal>:<key>`. Every key expires: an ended turn's
 * keys `retentionMs` after `turn.end`, its tombstone one retention period later; a live
 * turn's keys are kept alive by every append and lease renewal.
 *
 * On Redis Cluster the `{id}` hash tag keeps a turn's keys in one slot; the conversation
 * index and idempotency records live in slots of their own and are written in separate
 * steps whose half-done states are invisible or repaired (docs/reliability.md). Live
 * followers are woken through sharded pub/sub (`SPUBLISH` on `turn:{id}:wake`).
 *
 * Needs the optional peer dependency `ioredis`, and Redis ≥ 5 standalone or Sentinel,
 * or Redis ≥ 7 Cluster (sharded pub/sub); tested on 7.0.
 *
 * @example
 * import { createLifelineHandler } from 'lifeline-chat/server';
 * import { createRedisTurnLog } from 'lifeline-chat/server/redis';
 *
 * const store = createRedisTurnLog({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
 * // or, on a cluster: createRedisTurnLog({ url: 'redis-cluster://10.0.0.1:6379,10.0.0.2:6379' })
 * const handler = createLifelineHandler({ store, agent });
 */
export function createRedisTurnLog(options: RedisTurnLogOptions): TurnLog {
  return new RedisTurnLog(options);
}
