/**
 * A reference server instance in its own process, for redis-multi-instance.test.ts to
 * kill with SIGKILL mid-turn. Env: REDIS_URL, KEY_PREFIX, PRODUCER_LEASE_MS (optional). Prints
 * `{"port":N}` on stdout once it listens. Its agent streams `tick N ` deltas until the
 * process dies, so the kill always lands mid-turn.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { serve } from '../../../src/server/node/index.js';
import { createRedisTurnLog } from '../../../src/server/log/redis/index.js';

const env = process.env;
const store = createRedisTurnLog({
  url: env['REDIS_URL'] ?? '',
  keyPrefix: env['KEY_PREFIX'] ?? 'lifeline:',
  // The default lease unless the test names one.
  ...(env['PRODUCER_LEASE_MS'] ? { producerLeaseMs: Number(env['PRODUCER_LEASE_MS']) } : {}),
});
const handler = createLifelineHandler({
  store,
  basePath: '/api',
  agent: async function* ({ signal }) {
    for (let tick = 0; !signal.aborted; tick++) {
      yield { type: 'delta', text: `tick ${tick} ` };
      // Paced so the log grows steadily while the parent watches; never a test synchronisation.
      await delay(5);
    }
  },
});
const served = await serve(handler);
process.stdout.write(`${JSON.stringify({ port: served.port })}\n`);
