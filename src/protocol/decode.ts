import { ProtocolError } from '../errors.js';
import { ID_PATTERN, TURN_EVENT_TYPES, turnEventSchema, type DeltaEvent, type LoggedEvent, type TurnEvent, type UnknownEvent } from './schemas.js';

/** Limits applied while decoding untrusted event data. */
export interface DecodeLimits {
  /** Largest `data` payload of one event, in UTF-16 code units. Default 1 MiB. */
  maxEventSize?: number;
}

/** Default cap on one event's data: 1 Mi code units. */
export const DEFAULT_MAX_EVENT_SIZE = 1024 * 1024;

/** Outcome of {@link decodeEvent}; never throws. */
export type DecodeResult =
  | { readonly kind: 'event'; readonly event: TurnEvent }
  /**
   * An event of a type this client does not know (forward compatibility): `event` when it
   * names a valid turn id and seq (then it is placed, stored and relayed, but not shown).
   */
  | { readonly kind: 'unknown'; readonly type: string; readonly event: UnknownEvent | undefined }
  | { readonly kind: 'error'; readonly error: ProtocolError };

const invalid = (message: string, details?: unknown): DecodeResult => ({
  kind: 'error',
  error: new ProtocolError('invalid_event', message, { details }),
});

/** The event is of a type this client knows (else it is only placed, stored and relayed). */
export const isTurnEvent = (event: LoggedEvent): event is TurnEvent => TURN_EVENT_TYPES.includes(event.type as never);

/** Drops `__proto__`/`constructor`/`prototype` keys anywhere in parsed JSON (in place; 64 levels deep at most). */
function stripPoison(value: unknown, depth = 64): void {
  if (depth && typeof value === 'object' && value) {
    for (const key of Object.keys(value)) {
      const record = value as Record<string, unknown>;
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') delete record[key];
      else stripPoison(record[key], depth - 1);
    }
  }
}

/**
 * Validates an already-parsed value as a turn event (replay answers arrive as one JSON
 * document). Text deltas take {@link plainDelta}: zod costs far more per event. A delta
 * naming `turnId` (the followed turn, validated once) skips the id pattern.
 */
export function decodeEventValue(value: unknown, turnId?: string): DecodeResult {
  return wrapped(decodeValue(value, turnId));
}

/** A decoded event as a {@link DecodeResult}: a bare delta wrapped. */
const wrapped = (decoded: DeltaEvent | DecodeResult): DecodeResult => ('kind' in decoded ? decoded : { kind: 'event', event: decoded });

/** {@link decodeEventValue} with a plain delta answered bare (see {@link decodeData}). */
function decodeValue(value: unknown, turnId?: string): DeltaEvent | DecodeResult {
  const record = value as { type?: unknown; turnId?: unknown; seq?: unknown } | null;
  const id = record?.turnId;
  const delta = typeof id === 'string' && (id === turnId || ID_PATTERN.test(id)) ? plainDelta(record, id) : undefined;
  if (delta) return delta;
  const type = record?.type;
  if (typeof type === 'string' && !TURN_EVENT_TYPES.includes(type as never)) {
    const seq = record!.seq;
    const placed = typeof id === 'string' && ID_PATTERN.test(id) && typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0;
    // Kept as sent (it is stored and relayed), minus keys that could poison a prototype.
    if (placed) stripPoison(value);
    return { kind: 'unknown', type, event: placed ? (value as UnknownEvent) : undefined };
  }
  // Action and turn.end payloads carry arbitrary JSON that zod would copy key by key.
  stripPoison(value);
  const parsed = turnEventSchema.safeParse(value);
  return parsed.success
    ? { kind: 'event', event: parsed.data }
    : invalid('Event does not match the protocol.', parsed.error.issues);
}

/**
 * Decodes one SSE `data` payload into a typed event. Never throws: unknown types are
 * reported as skippable, anything malformed or oversized as a {@link ProtocolError}.
 */
export function decodeEvent(data: string, limits?: DecodeLimits, turnId?: string): DecodeResult {
  return wrapped(decodeData(data, limits, turnId));
}

/**
 * {@link decodeEvent} for the hot path: a plain text delta (nearly every event) comes
 * back as the event itself, unwrapped, which spares an object per
 * event; anything else as {@link decodeEvent} answers it. The same checks either way.
 */
export function decodeData(data: string, { maxEventSize = DEFAULT_MAX_EVENT_SIZE }: DecodeLimits = {}, turnId?: string): DeltaEvent | DecodeResult {
  if (data.length > maxEventSize) {
    return { kind: 'error', error: new ProtocolError('event_too_large', 'Event data is too large.', { details: { size: data.length, limit: maxEventSize } }) };
  }
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return invalid('Event data is not valid JSON.');
  }
  return decodeValue(value, turnId);
}

/**
 * A text delta of `turnId`, checked by hand with the schema's verdict (an integer seq ≥ 1,
 * a string text): text deltas are nearly every event of a turn, on the stream and in
 * storage, and zod costs far more per event. `undefined` for anything else (the caller
 * takes the schema's path). A fresh object with just the schema's keys, as zod strips others.
 */
export function plainDelta(value: unknown, turnId: string): DeltaEvent | undefined {
  const { type, seq, text, partId, providerMetadata } = (value ?? {}) as DeltaEvent;
  // A delta with providerMetadata (arbitrary JSON) takes the schema's path, like an action.
  if (type === 'delta' && (value as DeltaEvent).turnId === turnId && typeof text === 'string' && Number.isSafeInteger(seq) && seq > 0 && providerMetadata === undefined) {
    if (partId === undefined) return { turnId, seq, type, text };
    if (typeof partId === 'string') return { turnId, seq, type, text, partId };
  }
  return undefined;
}
