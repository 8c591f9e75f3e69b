/**
 * Decoding of one stream message on the hot path. Text deltas are nearly every event of
 * a turn, so they get a hand-written check equivalent to the protocol schema (same
 * acceptance, same stripped output); everything else, and anything odd, goes through
 * the zod schemas of `protocol/`.
 */
import { decodeEvent, decodeEventValue, type DecodeResult } from '../protocol/decode.js';
import type { DeltaEvent } from '../protocol/schemas.js';

/**
 * Decodes `data` for the turn `turnId`. Never throws. A delta naming `turnId` (a valid
 * id, checked when the turn was followed) with an integer seq ≥ 1 and a string text is
 * accepted directly; its output is a fresh object with exactly the schema's keys.
 */
export function decodeStreamEvent(data: string, turnId: string, maxEventSize: number): DecodeResult {
  if (data.length > maxEventSize) return decodeEvent(data, { maxEventSize });
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    // The slow path builds the standard error.
    return decodeEvent(data, { maxEventSize });
  }
  if (typeof value === 'object' && value !== null) {
    const record = value as { type?: unknown; turnId?: unknown; seq?: unknown; text?: unknown };
    const seq = record.seq;
    if (
      record.type === 'delta' &&
      record.turnId === turnId &&
      typeof record.text === 'string' &&
      typeof seq === 'number' &&
      Number.isSafeInteger(seq) &&
      seq >= 1
    ) {
      // Exactly the schema's four keys: the parsed object is the event (no copy). Else strip like zod does.
      const event = ownKeyCount(record) === 4 ? (record as DeltaEvent) : { turnId, seq, type: 'delta' as const, text: record.text };
      return { kind: 'event', event };
    }
  }
  return decodeEventValue(value);
}

/** Own enumerable keys, counted without allocating a key array (JSON.parse objects have no inherited enumerable keys). */
function ownKeyCount(value: object): number {
  let count = 0;
  for (const _key in value) count += 1;
  return count;
}
