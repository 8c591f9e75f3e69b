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
export type { IndexedDbStore, IndexedDbStoreOptions, ChunkWrite } from './storage/indexeddb-store.js';
export { createOutbox } from './outbox/index.js';
export type { OutboxController, OutboxDeps, OutboxStorage, OutboxChannel, OutboxLocks, NetworkMonitor, Enqueued } from './outbox/index.js';
