/**
 * Every failure Lifeline reports is a `LifelineError` with a stable, machine-readable
 * `code`. Apps branch on `code` (or on the guards below), never on `message`.
 */

/** Broad family of a failure; one subclass each. */
export type LifelineErrorKind = 'transport' | 'protocol' | 'storage' | 'cancelled' | 'usage';

/** Stable codes. New codes may be added; existing ones never change meaning. */
export type LifelineErrorCode =
  // transport: the network or the server answered badly
  | 'network_error'
  | 'timeout'
  | 'http_error'
  | 'unexpected_content_type'
  | 'unauthorized'
  | 'forbidden'
  | 'turn_not_found'
  | 'turn_expired'
  | 'rate_limited'
  | 'server_unavailable'
  | 'retry_exhausted'
  | 'submission_rejected'
  // protocol: the bytes arrived but do not follow PROTOCOL.md
  | 'invalid_event'
  | 'invalid_response'
  | 'event_too_large'
  | 'turn_too_large'
  | 'line_too_long'
  | 'seq_mismatch'
  | 'integrity_mismatch'
  // storage
  | 'storage_unavailable'
  | 'storage_quota_exceeded'
  | 'storage_blocked'
  | 'storage_closed'
  | 'storage_corrupt_record'
  | 'storage_write_failed'
  // lifecycle
  | 'cancelled'
  | 'disposed'
  // misuse of the API
  | 'invalid_argument';

/** Options shared by every Lifeline error constructor. */
export interface LifelineErrorOptions {
  /** The underlying error, kept for debugging. */
  cause?: unknown;
  /** HTTP status, when the failure came from a response. */
  status?: number;
  /** The server's own error code from `{"error":{"code"}}`, when there was one. */
  serverCode?: string;
  /** Extra structured detail (zod issues, sizes, seqs). */
  details?: unknown;
}

const BRAND = Symbol.for('lifeline.error');

/** Base class of every error Lifeline produces. */
export class LifelineError extends Error {
  readonly code: LifelineErrorCode;
  readonly kind: LifelineErrorKind = 'usage';
  readonly status: number | undefined;
  readonly serverCode: string | undefined;
  readonly details: unknown;
  /** Cross-realm brand: `instanceof` fails across iframes and bundle copies, this does not. */
  readonly [BRAND] = true;

  constructor(code: LifelineErrorCode, message: string, options: LifelineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LifelineError';
    this.code = code;
    this.status = options.status;
    this.serverCode = options.serverCode;
    this.details = options.details;
  }

  /** A plain object safe to log, store or post between tabs. */
  toJSON(): { name: string; kind: LifelineErrorKind; code: LifelineErrorCode; message: string; status?: number; serverCode?: string } {
    return {
      name: this.name,
      kind: this.kind,
      code: this.code,
      message: this.message,
      ...(this.status === undefined ? {} : { status: this.status }),
      ...(this.serverCode === undefined ? {} : { serverCode: this.serverCode }),
    };
  }
}

/** The network failed, or the server answered with something other than success. */
export class TransportError extends LifelineError {
  override readonly kind = 'transport';
  constructor(code: LifelineErrorCode, message: string, options?: LifelineErrorOptions) {
    super(code, message, options);
    this.name = 'TransportError';
  }
}

/** Data arrived that breaks PROTOCOL.md (bad JSON, wrong shape, too large, bad seq). */
export class ProtocolError extends LifelineError {
  override readonly kind = 'protocol';
  constructor(code: LifelineErrorCode, message: string, options?: LifelineErrorOptions) {
    super(code, message, options);
    this.name = 'ProtocolError';
  }
}

/** IndexedDB (or another `Store`) refused, failed or held a bad record. */
export class StorageError extends LifelineError {
  override readonly kind = 'storage';
  constructor(code: LifelineErrorCode, message: string, options?: LifelineErrorOptions) {
    super(code, message, options);
    this.name = 'StorageError';
  }
}

/** The operation was cancelled by the app (turn cancelled, client disposed). */
export class CancelledError extends LifelineError {
  override readonly kind = 'cancelled';
  constructor(code: 'cancelled' | 'disposed' = 'cancelled', message = 'The operation was cancelled.', options?: LifelineErrorOptions) {
    super(code, message, options);
    this.name = 'CancelledError';
  }
}

function branded(value: unknown): value is LifelineError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** True for any Lifeline error, even one from another realm or bundle copy. */
export function isLifelineError(value: unknown): value is LifelineError {
  return branded(value);
}
/** True for a {@link TransportError} from any realm. */
export function isTransportError(value: unknown): value is TransportError {
  return branded(value) && value.kind === 'transport';
}
/** True for a {@link ProtocolError} from any realm. */
export function isProtocolError(value: unknown): value is ProtocolError {
  return branded(value) && value.kind === 'protocol';
}
/** True for a {@link StorageError} from any realm. */
export function isStorageError(value: unknown): value is StorageError {
  return branded(value) && value.kind === 'storage';
}
/** True for a {@link CancelledError} from any realm. */
export function isCancelledError(value: unknown): value is CancelledError {
  return branded(value) && value.kind === 'cancelled';
}

/**
 * Rebuilds a typed error (the class of its `kind`) from the plain form
 * {@link LifelineError.toJSON} gave it: failed turns and outbox entries keep errors as data.
 */
export function errorFromJson(json: ReturnType<LifelineError['toJSON']>): LifelineError {
  const options = {
    ...(json.status === undefined ? {} : { status: json.status }),
    ...(json.serverCode === undefined ? {} : { serverCode: json.serverCode }),
  };
  switch (json.kind) {
    case 'transport':
      return new TransportError(json.code, json.message, options);
    case 'protocol':
      return new ProtocolError(json.code, json.message, options);
    case 'storage':
      return new StorageError(json.code, json.message, options);
    case 'cancelled':
      return new CancelledError(json.code === 'disposed' ? 'disposed' : 'cancelled', json.message, options);
    default:
      return new LifelineError(json.code, json.message, options);
  }
}

/** Any thrown value as a Lifeline error: a foreign one is a bug, reported as `invalid_argument` with it as cause. */
export function asLifelineError(error: unknown): LifelineError {
  if (branded(error)) return error;
  return new LifelineError('invalid_argument', error instanceof Error ? error.message : String(error), { cause: error });
}

/** `error` when it is a storage error, else a `storage_write_failed` one saying `message`, with `error` as its cause. */
export function asStorageError(error: unknown, message: string): StorageError {
  return isStorageError(error) ? error : new StorageError('storage_write_failed', message, { cause: error });
}
