// The reference server's public face.
export type { TurnLog, StoredTurn, NewTurn, IdempotencyRecord, NewTurnEvent, EventPage } from './turn-log.js';
export type { Agent, AgentContext, AgentEvent, AgentDeltaEvent, AgentActionEvent, AgentPartEvent } from './agent.js';
export { createLifelineHandler } from './handler.js';
export type { LifelineHandler, LifelineHandlerOptions } from './handler.js';
export { createMemoryTurnLog, DEFAULT_RETENTION_MS } from './memory-turn-log.js';
export type { MemoryTurnLog, MemoryTurnLogOptions } from './memory-turn-log.js';
export type { ServerErrorReporter, ServerErrorPhase } from './producer.js';
export { toNodeListener, serve } from './node.js';
export type { FetchHandler, NodeListener, NodeListenerOptions, ServeOptions, ServedHandler } from './node.js';
export type { JsonValue, MessageContent, PartObject, TurnEvent, TurnObject, ServerErrorCode, ServerTurnStatus } from '../protocol/schemas.js';
