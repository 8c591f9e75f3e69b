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
