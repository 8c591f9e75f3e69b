import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { defineDeliverySuite } from './delivery-suite.js';

defineDeliverySuite('memory turn log', async ({ now }) => {
  const log = createMemoryTurnLog({ now });
  // Wrapped by prototype (memory/index.ts allows it): every turn read of a listing is counted.
  let reads = 0;
  const wrapped: TurnLog = Object.create(log) as TurnLog;
  wrapped.getTurn = (turnId) => (reads++, log.getTurn(turnId));
  return { log, wrapped, work: async () => reads, cleanup: () => log.close() };
});
