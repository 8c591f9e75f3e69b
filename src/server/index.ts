// The reference server's public face: Web-standard Request/Response only, so it type-checks
// and runs without Node (edge functions, Next.js routes, Deno, Bun). The Node `http` adapter
// is its own entry, `lifeline/server/node` (./node.ts).
export type { TurnLog, StoredTurn, NewTurn, IdempotencyRecord, NewTurnEvent, EventPage } from './turn-log.js';
export type { Agent, AgentContext, AgentEvent, AgentDeltaEvent, AgentActionEvent } from './agent.js';
export { createLifelineHandler } from './handler.js';
export type { LifelineHandler, LifelineHandlerOptions } from './handler.js';
export { createMemoryTurnLog, DEFAULT_RETENTION_MS } from './memory-turn-log.js';
export type { MemoryTurnLog, MemoryTurnLogOptions } from './memory-turn-log.js';
export type { ServerErrorReporter, ServerErrorPhase } from './producer.js';
export type { JsonValue, MessageContent, TurnEvent, TurnObject, ServerErrorCode, ServerTurnStatus } from '../protocol/schemas.js';
