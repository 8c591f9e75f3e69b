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
  // protocol: the bytes arrived but do not follow docs/protocol.md
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
  // a bug inside Lifeline (never the network's or the app's doing): the turn ends failed, visibly
  | 'internal_error'
  // misuse of the API
  | 'invalid_argument';

/** Options shared by every Lifeline error constructor. */
export interface LifelineErrorOptions {
  /** The underlying error, kept for debugging. */
  cause?: unknown;
  /** HTTP status, when the failure came from a response. */
  status?: number | undefined;
  /** The server's own error code from `{"error":{"code"}}`, when there was one. */
  serverCode?: string | undefined;
  /** Extra structured detail (zod issues, sizes, seqs). */
  details?: unknown;
}

/** The plain form of an error ({@link LifelineError.toJSON}), as stored with failed turns and outbox entries. */
export interface LifelineErrorJson {
  name: string;
  kind: LifelineErrorKind;
  code: LifelineErrorCode;
  message: string;
  status?: number;
  serverCode?: string;
}

const BRAND = Symbol.for('lifeline.error');

/** Base class of every error Lifeline produces. */
export class LifelineError extends Error {
  // Declared only: the constructor sets them (no class-field initialisers to ship).
  declare readonly code: LifelineErrorCode;
  readonly kind: LifelineErrorKind = 'usage';
  override name = 'LifelineError';
  declare readonly status: number | undefined;
  declare readonly serverCode: string | undefined;
  declare readonly details: unknown;
  /** Cross-realm brand: `instanceof` fails across iframes and bundle copies, this does not. */
  readonly [BRAND] = true;

  /** The defaults serve `new CancelledError()`. */
  constructor(code: LifelineErrorCode = 'cancelled', message = 'Cancelled.', options: LifelineErrorOptions = {}) {
    super(message, options);
    this.code = code;
    this.status = options.status;
    this.serverCode = options.serverCode;
    this.details = options.details;
  }

  /** A plain object safe to log, store or post between tabs. */
  toJSON(): LifelineErrorJson {
    const { name, kind, code, message, status, serverCode } = this;
    return { name, kind, code, message, ...(status === undefined ? {} : { status }), ...(serverCode === undefined ? {} : { serverCode }) };
  }
}

/** A subclass of {@link LifelineError} for one kind. */
type KindClass<K extends LifelineErrorKind> = new (code?: LifelineErrorCode, message?: string, options?: LifelineErrorOptions) => LifelineError & { readonly kind: K };

/** The subclass of one kind: only its `kind` and `name` differ from the base. */
function kindClass<K extends LifelineErrorKind>(kind: K, name: string): KindClass<K> {
  return class extends LifelineError {
    override readonly kind = kind;
    override name = name;
  };
}

/** The network failed, or the server answered with something other than success. */
export const TransportError = kindClass('transport', 'TransportError');
export type TransportError = InstanceType<typeof TransportError>;
/** Data arrived that breaks docs/protocol.md (bad JSON, wrong shape, too large, bad seq). */
export const ProtocolError = kindClass('protocol', 'ProtocolError');
export type ProtocolError = InstanceType<typeof ProtocolError>;
/** IndexedDB (or another `Store`) refused, failed or held a bad record. */
export const StorageError = kindClass('storage', 'StorageError');
export type StorageError = InstanceType<typeof StorageError>;
/** The operation was cancelled by the app (turn cancelled, client disposed); codes `cancelled` (default) or `disposed`. */
export const CancelledError = kindClass('cancelled', 'CancelledError');
export type CancelledError = InstanceType<typeof CancelledError>;

const CLASSES = { transport: TransportError, protocol: ProtocolError, storage: StorageError, cancelled: CancelledError, usage: LifelineError };

/** A guard true for a Lifeline error of `kind` (any kind when absent), from any realm or bundle copy. */
const guard =
  (kind?: LifelineErrorKind) =>
  (value: unknown): boolean =>
    (value as { [BRAND]?: boolean } | null)?.[BRAND] === true && (kind === undefined || (value as LifelineError).kind === kind);

/** True for any Lifeline error, even one from another realm or bundle copy. */
export const isLifelineError = guard() as (value: unknown) => value is LifelineError;
/** True for a {@link TransportError} from any realm. */
export const isTransportError = guard('transport') as (value: unknown) => value is TransportError;
/** True for a {@link ProtocolError} from any realm. */
export const isProtocolError = guard('protocol') as (value: unknown) => value is ProtocolError;
/** True for a {@link StorageError} from any realm. */
export const isStorageError = guard('storage') as (value: unknown) => value is StorageError;
/** True for a {@link CancelledError} from any realm. */
export const isCancelledError = guard('cancelled') as (value: unknown) => value is CancelledError;

/** Rebuilds a typed error (the class of its `kind`) from its plain form: failed turns and outbox entries keep errors as data. */
export function errorFromJson(json: LifelineErrorJson): LifelineError {
  const { kind, code, message, ...options } = json;
  return new (CLASSES[kind] ?? LifelineError)(code, message, options);
}

/** Any thrown value as a Lifeline error: a foreign one is a bug, reported as `invalid_argument` with it as cause. */
export function asLifelineError(error: unknown): LifelineError {
  return isLifelineError(error) ? error : new LifelineError('invalid_argument', String((error as Error)?.message ?? error), { cause: error });
}

/** `error` when it is a storage error, else a `storage_write_failed` one saying `message`, with `error` as its cause. */
export function asStorageError(error: unknown, message: string): StorageError {
  return isStorageError(error) ? error : new StorageError('storage_write_failed', message, { cause: error });
}
