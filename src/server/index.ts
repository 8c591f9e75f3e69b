// The reference server's public face.
export type { TurnLog, StoredTurn, ExpiredTurn, NewTurn, IdempotencyRecord, NewTurnEvent, EventPage } from './turn-log.js';
export { DEFAULT_PAGE_BYTES, eventSize, isExpiredTurn } from './turn-log.js';
export type { Agent, AgentContext, AgentEvent, AgentDeltaEvent, AgentActionEvent } from './agent.js';
export { createLifelineHandler, DEFAULT_HEARTBEAT_MS, DEFAULT_MAX_LIVE_TURNS } from './handler.js';
export type { LifelineHandler, LifelineHandlerOptions } from './handler.js';
export { createMemoryTurnLog, DEFAULT_RETENTION_MS } from './memory-turn-log.js';
export type { MemoryTurnLog, MemoryTurnLogOptions } from './memory-turn-log.js';
export type { ServerErrorReporter, ServerErrorPhase } from './producer.js';
export { toNodeListener, serve, answerRefusedRequests } from './node.js';
export type { FetchHandler, NodeListener, NodeListenerOptions, ServeOptions, ServedHandler } from './node.js';
export type { JsonValue, MessageContent, TurnEvent, TurnObject, ServerErrorCode, ServerTurnStatus } from '../protocol/schemas.js';
