// The reference server's public face: Web-standard Request/Response only, so it type-checks
// and runs without Node (edge functions, Next.js routes, Deno, Bun). The Node `http` adapter
// is its own entry, `lifeline-chat/server/node` (./node/index.ts).
export type { TurnLog, StoredTurn, ExpiredTurn, NewTurn, IdempotencyRecord, NewTurnEvent, EventPage, DeliveryOutcome, StopRequest } from './log/turn-log.js';
export type { OperatorQuery } from './log/turn-log.js';
export type { OperatorAuditEntry } from './http/operator-access.js';
export type { MeterLike, CounterLike, HistogramLike } from './metrics.js';
export { DEFAULT_PAGE_BYTES, eventSize, isExpiredTurn } from './log/turn-log.js';
export type { Agent, AgentContext, AgentEvent, AgentDeltaEvent, AgentActionEvent, AgentPartEvent, ConversationReader } from './producer/agent.js';
export { createLifelineHandler, DEFAULT_HEARTBEAT_MS, DEFAULT_MAX_LIVE_TURNS } from './http/handler.js';
export type { LifelineHandler, LifelineHandlerOptions } from './http/handler.js';
export { conformanceAgent } from './producer/conformance-agent.js';
export type { ConformanceAgentOptions } from './producer/conformance-agent.js';
export { createMemoryTurnLog, DEFAULT_RETENTION_MS } from './log/memory/index.js';
export type { MemoryTurnLog, MemoryTurnLogOptions } from './log/memory/index.js';
export type { ServerErrorReporter, ServerErrorPhase } from './producer/producer.js';
export type {
  JsonValue,
  MessageContent,
  PartObject,
  TurnEvent,
  TurnObject,
  ServerErrorCode,
  ServerTurnStatus,
  Delivery,
  DeliveryState,
} from '../protocol/schemas.js';
export type { OperatorState, OperatorTurn } from '../protocol/server-schemas.js';
