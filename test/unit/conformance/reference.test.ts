/**
 * The whole conformance suite against the reference server with the conformance agent,
 * on the memory turn log and on the Redis turn log (a real redis-server): every check
 * must pass, none may be skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatResult, runConformance } from '../../../src/conformance/index.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';
import { textAgent } from '../../fixtures/agents.js';
import { startRedisServer, type RedisServer } from '../../fixtures/redis.js';
import { FAST, startConformanceServer } from './reference-server.js';

const NEEDS_AGENT = [
  's1.context',
  's11.end',
  's2.agent-events',
  's2.failed-turn',
  's2.heartbeats',
  's2.live-stream',
  's2.liveness',
  's2.resume-ahead-live',
  's3.live-turn',
  's5.cancel-live',
  's9.continues',
];

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

  it('without the conformance agent, skips exactly the checks that need it, with the reason, and passes the rest', async () => {
    const server = await startConformanceServer({ agent: textAgent('A plain agent that ignores scripts: naïve 😀.', { chunk: 3 }) });
    try {
      const report = await runConformance({ baseUrl: server.baseUrl, ...FAST });
      const skipped = report.results.filter((result) => result.status === 'skip');
      expect(skipped.map((result) => result.id).sort()).toEqual(NEEDS_AGENT);
      for (const result of skipped) expect(result.reason).toMatch(/needs the conformance agent \(docs\/conformance.md\)/);
      expect(report.results.filter((result) => result.status === 'fail').map(formatResult)).toEqual([]);
    } finally {
      await server.close();
    }
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
