import type * as z from 'zod/mini';
import { ProtocolError } from '../errors.js';
import { ID_PATTERN, TURN_EVENT_TYPES, turnEventSchema, type DeltaEvent, type TurnEvent, type TurnEventType } from './schemas.js';

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
  /** A well-formed event of a type this client does not know: skip it (forward compatibility). */
  | { readonly kind: 'unknown'; readonly type: string; readonly seq: number | undefined }
  | { readonly kind: 'error'; readonly error: ProtocolError };

const KNOWN = new Set<string>(TURN_EVENT_TYPES);

/** Keys that would reach an object's prototype if copied naively. */
const POISON_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Drops `__proto__`/`constructor`/`prototype` keys anywhere in parsed JSON (in place). */
function stripPoison(value: unknown, depth = 0): void {
  if (depth > 64 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) stripPoison(item, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    if (POISON_KEYS.has(key)) delete (value as Record<string, unknown>)[key];
    else stripPoison((value as Record<string, unknown>)[key], depth + 1);
  }
}

/**
 * Validates an already-parsed value as a turn event. Used for replay answers, whose
 * events arrive as one JSON document; their text deltas take {@link plainDelta} like the
 * stream's (zod/mini has no compiled object parser, so its schema path costs a replayed
 * delta about three times what classic zod did).
 */
export function decodeEventValue(value: unknown): DecodeResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'error', error: new ProtocolError('invalid_event', 'Event data is not a JSON object.') };
  }
  const record = value as Record<string, unknown>;
  const type = record['type'];
  if (typeof type === 'string' && !KNOWN.has(type)) {
    const seq = record['seq'];
    return { kind: 'unknown', type, seq: typeof seq === 'number' ? seq : undefined };
  }
  const turnId = record['turnId'];
  if (type === 'delta' && typeof turnId === 'string' && ID_PATTERN.test(turnId)) {
    const delta = plainDelta(record, turnId);
    if (delta !== undefined) return { kind: 'event', event: delta };
  }
  // Only action payloads carry arbitrary JSON; text deltas are flat and need no walk.
  if (type === 'action' || type === 'turn.end') stripPoison(record);
  const parsed = turnEventSchema.safeParse(record);
  if (!parsed.success) {
    return {
      kind: 'error',
      error: new ProtocolError('invalid_event', `Event does not match the protocol: ${summarize(parsed.error)}`, {
        details: parsed.error.issues,
      }),
    };
  }
  return { kind: 'event', event: parsed.data };
}

/**
 * Decodes one SSE `data` payload into a typed event. Never throws: unknown types are
 * reported as skippable, anything malformed or oversized as a {@link ProtocolError}.
 */
export function decodeEvent(data: string, limits: DecodeLimits = {}): DecodeResult {
  const max = limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE;
  if (data.length > max) {
    return {
      kind: 'error',
      error: new ProtocolError('event_too_large', `Event data is ${data.length} code units, over the limit of ${max}.`, {
        details: { size: data.length, limit: max },
      }),
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (cause) {
    return { kind: 'error', error: new ProtocolError('invalid_event', 'Event data is not valid JSON.', { cause }) };
  }
  return decodeEventValue(value);
}

/** The first three issues of a zod error, one line (messages and diagnostics stay small). */
export function summarize(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

/** True when `type` names an event this version of the protocol defines. */
export function isKnownEventType(type: string): type is TurnEventType {
  return KNOWN.has(type);
}

/**
 * A text delta of `turnId`, checked by hand with the schema's verdict (an integer seq ≥ 1,
 * a string text): text deltas are nearly every event of a turn, on the stream and in
 * storage, and zod costs far more per event. `undefined` for anything else (the caller
 * takes the schema's path). With exactly the schema's four keys the object itself is the
 * event (no copy); else a copy with just those keys, as zod strips unknown ones.
 */
export function plainDelta(value: unknown, turnId: string): DeltaEvent | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as { type?: unknown; turnId?: unknown; seq?: unknown; text?: unknown };
  const { seq, text } = record;
  if (record.type !== 'delta' || record.turnId !== turnId || typeof text !== 'string' || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
    return undefined;
  }
  return ownKeyCount(record) === 4 ? (record as DeltaEvent) : { turnId, seq, type: 'delta', text };
}

/** Own enumerable keys, counted without allocating a key array (parsed and cloned objects have no inherited enumerable keys). */
function ownKeyCount(value: object): number {
  let count = 0;
  for (const _key in value) count += 1;
  return count;
}
