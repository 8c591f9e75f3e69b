/**
 * Text deltas skip zod (protocol/decode.ts, `plainDelta`): nearly every event of a turn is
 * one, and the schema costs far more per event. That is only sound if the fast path
 * answers exactly what the schema does. Checked here on many generated payloads, valid
 * and invalid: decoding the SSE data must give the schema's verdict, the same event (every
 * field, in the same key order) or the same typed error code.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEvent, decodeEventValue, type DecodeResult } from '../../../src/protocol/decode.js';
import { turnEventSchema } from '../../../src/protocol/schemas.js';

const TURN = 'turn_abcdefghijklmnop';

/** `absent` leaves the key out. */
const absent = Symbol('absent');

/** Mostly `valid` (so the fast path is reached often), else one of `invalid`. */
const mostly = (valid: fc.Arbitrary<unknown>, ...invalid: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ arbitrary: valid, weight: 6 }, ...invalid.map((arbitrary) => ({ arbitrary, weight: 1 })));

const payload = fc.record({
  turnId: mostly(fc.constant(TURN), fc.constant('other_turn_id'), fc.constantFrom('', 'bad id', 'x'.repeat(129), 'é', 7, null), fc.constant(absent)),
  seq: mostly(
    fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(1, 9_007_199_254_740_991)),
    fc.integer({ min: -5, max: 0 }),
    fc.constantFrom(1.5, 2 ** 53, 1e300, -0, '3', null, true),
    fc.constant(absent),
  ),
  type: mostly(fc.constant('delta'), fc.constantFrom('Delta', 'turn.start', 'part', 'delta ', 1), fc.constant(absent)),
  text: mostly(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom('', ' 🙂', '\u0000', '\ud800')), fc.constantFrom(42, null), fc.constant(absent)),
  partId: mostly(fc.constant(absent), fc.string({ maxLength: 6 }), fc.constantFrom(5, null)),
  providerMetadata: mostly(fc.constant(absent), fc.dictionary(fc.constantFrom('a', 'b'), fc.jsonValue({ maxDepth: 2 })), fc.constantFrom('meta', null), fc.constant([1])),
  extra: mostly(fc.constant(absent), fc.jsonValue({ maxDepth: 1 })),
});

/** The payload as a server would send it: keys in a fixed or a shuffled order. */
const sent = fc.tuple(payload, fc.boolean()).map(([fields, reversed]) => {
  const entries = Object.entries(fields).filter(([, value]) => value !== absent);
  return Object.fromEntries(reversed ? entries.reverse() : entries);
});

/** What the schema alone says of the parsed data. */
function bySchema(value: unknown): { kind: 'event'; json: string } | { kind: 'error'; code: string } {
  const parsed = turnEventSchema.safeParse(value);
  return parsed.success ? { kind: 'event', json: JSON.stringify(parsed.data) } : { kind: 'error', code: 'invalid_event' };
}

function verdict(result: DecodeResult): { kind: 'event'; json: string } | { kind: 'error'; code: string } | { kind: 'unknown' } {
  if (result.kind === 'event') return { kind: 'event', json: JSON.stringify(result.event) };
  if (result.kind === 'error') return { kind: 'error', code: result.error.code };
  return { kind: 'unknown' };
}

describe('the text delta fast path', () => {
  it('gives the schema’s verdict on generated payloads: the same event, key order included, or the same error code', () => {
    let fast = 0;
    fc.assert(
      fc.property(sent, fc.constantFrom(TURN, 'other_turn_id', undefined), (value, followed) => {
        const data = JSON.stringify(value);
        const expected = bySchema(JSON.parse(data));
        const decoded = decodeEvent(data, {}, followed);
        // An unknown type is not the schema's to judge (forward compatibility): its own path, not the fast one.
        if (decoded.kind === 'unknown') {
          expect(typeof value['type'] === 'string' && value['type'] !== 'delta').toBe(true);
          return;
        }
        expect(verdict(decoded)).toEqual(expected);
        expect(verdict(decodeEventValue(JSON.parse(data), followed))).toEqual(expected);
        if (decoded.kind === 'event') {
          expect(decoded.event).toStrictEqual(turnEventSchema.parse(JSON.parse(data)));
          if (decoded.event.type === 'delta' && value['providerMetadata'] === undefined) fast++;
        }
      }),
      { numRuns: 5_000 },
    );
    // The generator reaches the fast path (valid text deltas), not only the schema's.
    expect(fast).toBeGreaterThan(400);
  });
});
