/**
 * Decoding of one stream message on the hot path. Text deltas are nearly every event of
 * a turn, so they get a hand-written check equivalent to the protocol schema (same
 * acceptance, same stripped output); everything else, and anything odd, goes through
 * the zod schemas of `protocol/`.
 */
import { decodeEvent, decodeEventValue, plainDelta, type DecodeResult } from '../protocol/decode.js';

/**
 * Decodes `data` for the turn `turnId`. Never throws. A delta naming `turnId` (a valid
 * id, checked when the turn was followed) is accepted by {@link plainDelta}.
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
  const event = plainDelta(value, turnId);
  return event === undefined ? decodeEventValue(value) : { kind: 'event', event };
}
