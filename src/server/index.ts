// The reference server's public face: Web-standard Request/Response only, so it type-checks
// and runs without Node (edge functions, Next.js routes, Deno, Bun). The Node `http` adapter
// is its own entry, `lifeline/server/node` (./node.ts).
export type { TurnLog, StoredTurn, ExpiredTurn, NewTurn, IdempotencyRecord, NewTurnEvent, EventPage } from './turn-log.js';
export { DEFAULT_PAGE_BYTES, eventSize, isExpiredTurn } from './turn-log.js';
export type { Agent, AgentContext, AgentEvent, AgentDeltaEvent, AgentActionEvent, AgentPartEvent } from './agent.js';
export { createLifelineHandler, DEFAULT_HEARTBEAT_MS, DEFAULT_MAX_LIVE_TURNS } from './handler.js';
export type { LifelineHandler, LifelineHandlerOptions } from './handler.js';
export { conformanceAgent } from './conformance-agent.js';
export type { ConformanceAgentOptions } from './conformance-agent.js';
export { createMemoryTurnLog, DEFAULT_RETENTION_MS } from './memory-turn-log.js';
export type { MemoryTurnLog, MemoryTurnLogOptions } from './memory-turn-log.js';
export type { ServerErrorReporter, ServerErrorPhase } from './producer.js';
export type { JsonValue, MessageContent, PartObject, TurnEvent, TurnObject, ServerErrorCode, ServerTurnStatus } from '../protocol/schemas.js';
