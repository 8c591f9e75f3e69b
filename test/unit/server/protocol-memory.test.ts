import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { defineBoundsSuite } from './bounds-suite.js';
import { defineContinuationSuite } from './continuation-suite.js';
import { defineProtocolSuite, type MakeProtocolLog } from './protocol-suite.js';

const makeLog: MakeProtocolLog = async ({ now, retentionMs }) => {
  const log = createMemoryTurnLog({ now, retentionMs });
  return { log, cleanup: () => log.close() };
};
defineProtocolSuite('memory turn log', makeLog);
defineBoundsSuite('memory turn log', makeLog);
defineContinuationSuite('memory turn log', makeLog);
