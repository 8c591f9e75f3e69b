/**
 * Every route of the Lifeline protocol (docs/protocol.md), in one catch-all: the client's
 * `baseUrl` and the handler's `basePath` are both this route's URL, /api/lifeline.
 * On the Node runtime: the Redis log when REDIS_URL is set (many instances, serverless),
 * the memory log of this one process otherwise (docs/deploy.md).
 */
import { after } from 'next/server';
import { createLifelineHandler, createMemoryTurnLog, type TurnLog } from 'lifeline-chat/server';
import { uiMessageAgent } from 'lifeline-chat/server/ai-sdk';
import { createRedisTurnLog } from 'lifeline-chat/server/redis';
import { streamAnswer } from '../../../../../chat/ai-model';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const url = process.env['REDIS_URL'];
// One log per process: kept on globalThis so a development reload of this module keeps its turns.
const scope = globalThis as { lifelineLog?: TurnLog };
const log = (scope.lifelineLog ??= url ? createRedisTurnLog({ url }) : createMemoryTurnLog());

const handler = createLifelineHandler({
  basePath: '/api/lifeline',
  store: log,
  // The deterministic mock model of examples/chat through the real `streamText`; put your model here.
  agent: uiMessageAgent(({ messages, signal }) => streamAnswer(messages, { delayMs: Number(process.env['AI_MODEL_DELAY_MS'] ?? 40), signal }), { log }),
  // Keeps a serverless invocation alive until the turn's producer is done (Next's `after`).
  waitUntil: after,
});

export { handler as GET, handler as POST };
