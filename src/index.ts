// The Lifeline client's public face. Explicit named exports only.
export {
  LifelineError,
  TransportError,
  ProtocolError,
  StorageError,
  CancelledError,
  isLifelineError,
  isTransportError,
  isProtocolError,
  isStorageError,
  isCancelledError,
} from './errors.js';
export type { LifelineErrorCode, LifelineErrorKind, LifelineErrorOptions } from './errors.js';
export { createIndexedDbStore, isIndexedDbAvailable } from './storage/indexeddb-store.js';
export type { IndexedDbStore, IndexedDbStoreOptions } from './storage/indexeddb-store.js';
export { createLifeline } from './client.js';
export { createMemoryStore } from './storage/memory-store.js';
export type { MemoryStore } from './storage/memory-store.js';
export type {
  LifelineClient,
  LifelineOptions,
  Turn,
  TurnSnapshot,
  EndedTurnSnapshot,
  TurnStatus,
  EndedTurnStatus,
  ActionState,
  MessagePart,
  TextPart,
  PartEntry,
  ConnectionInfo,
  ConnectionState,
  RecoveryInfo,
  RecoveryPath,
  StallInfo,
  RetryOptions,
  StallOptions,
  LimitOptions,
  HeadersInput,
  StorageStatus,
  Diagnostic,
  DiagnosticType,
  DrillKind,
  Subscribable,
  ExternalStore,
  Conversation,
  ConversationItem,
  ConversationSnapshot,
  Submission,
  SendOptions,
  Outbox,
  OutboxEntry,
  OutboxOptions,
  ReceiptOptions,
  OutboxRecord,
  OutboxState,
} from './types.js';
export type { Store, TurnRecord, EventChunk, LoadedTurn, LoadResult, TurnWrite } from './storage/store.js';
export type { JsonValue, MessageContent, PartObject, SubmitContext, JsonObject } from './protocol/schemas.js';
