/**
 * The reference server for benchmarks that need the real protocol (resume, stall):
 * `createLifelineHandler` with a memory log, as a node listener to mount under `/api`,
 * plus a direct submit that skips HTTP.
 */
import { createLifelineHandler, type LifelineHandler } from '../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../src/server/log/memory/index.js';
import { toNodeListener, type NodeListener } from '../../src/server/node/index.js';
import type { Agent } from '../../src/server/producer/agent.js';
import type { TurnLog } from '../../src/server/log/turn-log.js';
import type { SubmitAnswer } from '../../src/protocol/schemas.js';

export interface Reference {
  handler: LifelineHandler;
  listener: NodeListener;
  log: TurnLog;
  /** Submits `{ content }` to conversation `conversationId` through the handler (no HTTP); the turn id. */
  submit(conversationId: string, content: string): Promise<string>;
  close(): Promise<void>;
}

let keys = 0;

/** `heartbeatMs`: the server's interval; `'default'` leaves the handler's own (announced as `Lifeline-Heartbeat`). */
export function startReference(agent: Agent, options: { heartbeatMs?: number | 'default' } = {}): Reference {
  const log = createMemoryTurnLog();
  const errors: unknown[] = [];
  const handler = createLifelineHandler({
    agent,
    store: log,
    basePath: '/api',
    ...(options.heartbeatMs !== 'default' && { heartbeatMs: options.heartbeatMs ?? 10_000 }),
    onError: (error) => errors.push(error),
  });
  return {
    handler,
    listener: toNodeListener(handler, { onError: (error) => errors.push(error) }),
    log,
    async submit(conversationId, content) {
      keys++;
      const response = await handler(
        new Request(`http://127.0.0.1/api/conversations/${conversationId}/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': `bench-key-${process.pid}-${keys}-padding` },
          body: JSON.stringify({ content }),
        }),
      );
      if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as SubmitAnswer).turnId;
    },
    async close() {
      await handler.close();
      await log.close();
    },
  };
}
