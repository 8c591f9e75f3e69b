/**
 * docs/faults.md #51 on a real redis-server that is stopped under a running handler:
 * every route answers `503 unavailable` with `Retry-After` after the store timeout (never
 * ioredis's minute of retries, never a 500), and `/healthz` tells the load balancer.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { errorBodySchema } from '../../../../src/protocol/schemas.js';
import { createRedisTurnLog } from '../../../../src/server/log/redis/index.js';
import type { TurnLog } from '../../../../src/server/log/turn-log.js';
import { startRedisServer, type RedisServer } from '../../../fixtures/redis.js';
import { newKey, startTestServer, submitMessage, waitForTurnEnd, type TestServer } from '../../../fixtures/server.js';

let redis: RedisServer;
let log: TurnLog;
let server: TestServer;

beforeAll(async () => {
  redis = await startRedisServer();
  log = createRedisTurnLog({ url: redis.url, keyPrefix: 'down:', onError: () => undefined });
  server = await startTestServer({ store: log });
});

afterAll(async () => {
  await server?.close().catch(() => undefined);
  await log?.close().catch(() => undefined);
});

it('answers 503 unavailable with Retry-After on every route once Redis is gone, and /healthz turns 503', async () => {
  const answer = await submitMessage(server.baseUrl, 'conv-down', 'before the outage');
  await waitForTurnEnd(log, answer.turnId);
  expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
  await redis.stop();

  const requests: [string, RequestInit][] = [
    [`/conversations/conv-down/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': newKey() }, body: '{"content":"x"}' }],
    [`/turns/${answer.turnId}/events`, {}],
    [`/turns/${answer.turnId}`, {}],
    [`/conversations/conv-down/turns`, {}],
    [`/turns/${answer.turnId}/cancel`, { method: 'POST' }],
    [`/healthz`, {}],
  ];
  const timings = await Promise.all(
    requests.map(async ([path, init]) => {
      const started = performance.now();
      const response = await fetch(`${server.baseUrl}${path}`, init);
      const took = Math.round(performance.now() - started);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(errorBodySchema.parse(await response.json()).error.code).toBe('unavailable');
      return `${init.method ?? 'GET'} ${path.replace(answer.turnId, '{id}')}: ${response.status} in ${took} ms`;
    }),
  );
  console.log(`Redis stopped:\n  ${timings.join('\n  ')}`);
});
