/** The shared-store suite (redis-shared-store-suite.ts) on one real redis-server. */
import { afterAll, beforeAll } from 'vitest';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';
import { defineSharedStoreSuite } from './redis-shared-store-suite.js';

let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  await redis?.stop();
});

defineSharedStoreSuite('Redis', () => redis.url);
