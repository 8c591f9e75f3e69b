/**
 * The protocol's decoders against the schemas themselves: replayed and stored text deltas
 * skip zod (like the stream's), so the schema is the reference here, and the schemas,
 * written with zod/mini, still get what classic zod gave them by default (readable
 * English issues, cyclic values parsed instead of overflowing the stack).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEventValue } from '../../../src/protocol/decode.js';
import { submitBodySchema, turnEventSchema } from '../../../src/protocol/schemas.js';
import { checkAll, outboxRecordSchema } from '../../../src/storage/records.js';

describe('decodeEventValue', () => {
  const valueArb = fc.oneof(
    fc.record(
      {
        turnId: fc.constantFrom('turn_a', 'x'.repeat(128), 'x'.repeat(129), '', 'bad id!', 7),
        seq: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constantFrom(1.5, Number.MAX_SAFE_INTEGER, 2 ** 60, Number.NaN, '3')),
        type: fc.constantFrom('delta', 'delta', 'turn.start', 'turn.end'),
        text: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
        extra: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  );

  it('answers exactly what the protocol schema answers', () => {
    fc.assert(
      fc.property(valueArb, (value) => {
        const reference = turnEventSchema.safeParse(structuredClone(value));
        const decoded = decodeEventValue(value);
        if (reference.success) expect(decoded).toEqual({ kind: 'event', event: reference.data });
        else expect(decoded.kind).toBe('error');
      }),
      { numRuns: 2000 },
    );
  });

  it('explains a bad event with the path and zod English message of each issue', () => {
    const decoded = decodeEventValue({ type: 'delta', turnId: 'turn_a', seq: 1.5, text: 'x' });
    expect(decoded.kind === 'error' && [decoded.error.message, decoded.error.details]).toEqual([
      'Event does not match the protocol.',
      [expect.objectContaining({ path: ['seq'], message: 'Invalid input: expected int, received number' })],
    ]);
  });
});

describe('cyclic values', () => {
  const cyclic = (): Record<string, unknown> => {
    const value: Record<string, unknown> = { a: 1 };
    value['self'] = value;
    return value;
  };

  it('parse as JSON content instead of overflowing the stack', () => {
    expect(submitBodySchema.safeParse({ content: cyclic() }).success).toBe(true);
  });

  it('in a stored record are checked without throwing', () => {
    const record = {
      operationId: 'op_aaaaaaaaaaaaaaaa',
      conversationId: 'c1',
      content: cyclic(),
      createdAt: 1,
      order: 1,
      attempts: 0,
      nextAttemptAt: 0,
      state: 'queued',
    };
    expect(checkAll(outboxRecordSchema, 'outbox', [record], 'operationId').items).toHaveLength(1);
  });
});
