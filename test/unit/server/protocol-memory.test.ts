import { createMemoryTurnLog } from '../../../src/server/memory-turn-log.js';
import { defineBoundsSuite } from './bounds-suite.js';
import { defineProtocolSuite } from './protocol-suite.js';

defineProtocolSuite('memory turn log', async ({ now, retentionMs }) => {
  const log = createMemoryTurnLog({ now, retentionMs });
  return { log, cleanup: () => log.close() };
});

defineBoundsSuite('memory turn log', async ({ now, retentionMs }) => {
  const log = createMemoryTurnLog({ now, retentionMs });
  return { log, cleanup: () => log.close() };
});
