/**
 * The whole conformance suite against the reference server with the conformance agent,
 * on the memory turn log and on the Redis turn log (a real redis-server): every check
 * must pass, none may be skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatResult, runConformance } from '../../../src/conformance/index.js';
import { createRedisTurnLog } from '../../../src/server/redis-turn-log.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';
import { FAST, startConformanceServer } from './reference-server.js';

async function expectAllPass(server: { baseUrl: string; close(): Promise<void> }): Promise<void> {
  try {
    const report = await runConformance({ baseUrl: server.baseUrl, ...FAST });
    expect(report.results.filter((result) => result.status !== 'pass').map(formatResult)).toEqual([]);
    expect(report.passed).toBe(report.results.length);
    expect(report.ok).toBe(true);
  } finally {
    await server.close();
  }
}

describe('conformance suite against the reference server', () => {
  it('passes every check on the memory turn log', async () => {
    await expectAllPass(await startConformanceServer());
  });

  describe('on the Redis turn log', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it('passes every check', async () => {
      const store = createRedisTurnLog({ url: redis.url, keyPrefix: 'conformance:' });
      try {
        await expectAllPass(await startConformanceServer({ store }));
      } finally {
        await store.close();
      }
    });
  });
});
