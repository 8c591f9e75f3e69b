/** What the Redis turn log tests share: a redis-server per file, logs and clients on it, turn builders. */
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { createRedisTurnLog, type RedisTurnLogOptions } from '../../../src/server/log/redis/index.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';

let redis: RedisServer;
const opened: { close(): Promise<void> }[] = [];
let prefixCounter = 0;

/** Call at the top of a test file: one redis-server for the file, every log and client closed after it. */
export function useRedis(): void {
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    for (const item of opened.splice(0).reverse()) await item.close().catch(() => undefined);
    await redis?.stop();
  });
}

/** The file's redis-server, once `useRedis`'s beforeAll ran. */
export function redisUrl(): string {
  return redis.url;
}

/** A fresh key space per test, so tests never see each other's turns. */
export function newPrefix(): string {
  prefixCounter++;
  return `t${prefixCounter}:`;
}

export interface Opened {
  log: TurnLog;
  errors: unknown[];
}

/** A Redis turn log on the file's server (its errors collected), closed after the file. */
export function openLog(options: Partial<RedisTurnLogOptions> & { keyPrefix: string }): Opened {
  const errors: unknown[] = [];
  const log = createRedisTurnLog({
    ...(options.client ? {} : { url: redisUrl() }),
    onError: (error) => errors.push(error),
    ...options,
  });
  opened.push(log);
  return { log, errors };
}

/** A plain ioredis client on the file's server, closed after the file. */
export function client(options: { keyPrefix?: string } = {}): Redis {
  const redisClient = new Redis(redisUrl(), options);
  opened.push({ close: async () => redisClient.disconnect() });
  return redisClient;
}

let turnCounter = 0;
/** A new turn of conv_1 by alice unless told otherwise, with an id no other test uses. */
export async function newTurn(log: TurnLog, init: { conversationId?: string; principal?: string; createdAt?: string } = {}) {
  turnCounter++;
  return log.createTurn({
    id: `turn_${turnCounter}_${Date.now().toString(36)}`,
    conversationId: init.conversationId ?? 'conv_1',
    messageId: `msg_${turnCounter}`,
    principal: init.principal ?? 'alice',
    content: 'hello',
    createdAt: init.createdAt ?? new Date().toISOString(),
  });
}

/** The turn.end event of a complete turn whose text is `text`. */
export async function endOf(text: string) {
  return { type: 'turn.end' as const, status: 'complete' as const, textLength: text.length, textSha256: await sha256Hex(text) };
}

/** A signal that never aborts. */
export const never = (): AbortSignal => new AbortController().signal;
