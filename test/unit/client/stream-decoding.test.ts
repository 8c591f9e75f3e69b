/**
 * The two hot-path shortcuts of the stream, checked against exact references: the
 * frame limiter never misses a line or block over its cap (and leaves honest streams
 * alone), and the fast delta decoder answers exactly what the protocol schema answers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEvent } from '../../../src/protocol/decode.js';
import { decodeStreamEvent } from '../../../src/transport/event-decoder.js';
import { createFrameLimiter } from '../../../src/transport/sse-connection.js';

const BREAKS = ['\n', '\r', '\r\n'] as const;

/** Exact sizes: longest line and largest block (bytes of its lines + one per break). */
function reference(lines: { length: number; blankAfter: boolean }[]): { maxLine: number; maxBlock: number } {
  let maxLine = 0;
  let maxBlock = 0;
  let block = 0;
  for (const line of lines) {
    maxLine = Math.max(maxLine, line.length);
    block += line.length + 1;
    maxBlock = Math.max(maxBlock, block);
    if (line.blankAfter) block = 0;
  }
  return { maxLine, maxBlock };
}

const streamArb = fc
  .tuple(
    fc.array(fc.record({ length: fc.integer({ min: 1, max: 300 }), blankAfter: fc.boolean(), brk: fc.constantFrom(...BREAKS) }), { minLength: 1, maxLength: 60 }),
    fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 20 }),
  )
  .map(([lines, cuts]) => {
    let text = '';
    for (const line of lines) {
      text += 'x'.repeat(line.length) + line.brk;
      if (line.blankAfter) text += line.brk;
    }
    const bytes = new TextEncoder().encode(text);
    const chunks: Uint8Array[] = [];
    let offset = 0;
    for (let i = 0; offset < bytes.length; i++) {
      const size = cuts[i % cuts.length] as number;
      chunks.push(bytes.subarray(offset, offset + size));
      offset += size;
    }
    return { lines, chunks, sizes: reference(lines) };
  });

function firstViolation(chunks: Uint8Array[], maxLineBytes: number, maxEventBytes: number) {
  const check = createFrameLimiter({ maxLineBytes, maxEventBytes });
  for (const chunk of chunks) {
    const violation = check(chunk);
    if (violation !== undefined) return violation;
  }
  return undefined;
}

describe('frame limiter', () => {
  it('reports every line over maxLineBytes, whatever the chunking', () => {
    fc.assert(
      fc.property(streamArb, fc.integer({ min: 1, max: 400 }), ({ chunks, sizes }, maxLine) => {
        const violation = firstViolation(chunks, maxLine, Number.MAX_SAFE_INTEGER);
        if (sizes.maxLine > maxLine) expect(violation?.error.code).toBe('line_too_long');
        else expect(violation).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('reports every block over maxEventBytes, and leaves blocks well under it alone', () => {
    fc.assert(
      fc.property(streamArb, fc.integer({ min: 1, max: 3000 }), ({ chunks, sizes }, maxEvent) => {
        const violation = firstViolation(chunks, Number.MAX_SAFE_INTEGER, maxEvent);
        if (sizes.maxBlock > maxEvent) expect(violation?.error.code).toBe('event_too_large');
        // Counting is exact on the careful path and may overcount (CRLF, a blank line split across chunks) on the quick one.
        if (sizes.maxBlock * 4 <= maxEvent) expect(violation).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the whole lines before the violating one', () => {
    const encoder = new TextEncoder();
    const check = createFrameLimiter({ maxLineBytes: 10, maxEventBytes: 1000 });
    const chunk = encoder.encode('data: 1\n\nid: 2\nxxxxxxxxxxxxxxxx');
    expect(check(chunk)).toEqual({ error: expect.objectContaining({ code: 'line_too_long' }), keep: 'data: 1\n\nid: 2\n'.length });
  });
});

describe('fast delta decoding', () => {
  const TURN = 'turn_fast_decoding_01';
  const valueArb = fc.oneof(
    fc.record(
      {
        turnId: fc.constantFrom(TURN, 'other_turn', 'bad id!', 7),
        seq: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constant(1.5), fc.constant(2 ** 60), fc.constant('3')),
        type: fc.constantFrom('delta', 'action', 'turn.end', 'thinking', 5),
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
        const data = JSON.stringify(value) ?? 'null';
        const fast = decodeStreamEvent(data, TURN, 1024 * 1024);
        const slow = decodeEvent(data);
        expect(fast.kind).toBe(slow.kind);
        if (fast.kind === 'event' && slow.kind === 'event') expect(fast.event).toEqual(slow.event);
        if (fast.kind === 'error' && slow.kind === 'error') expect(fast.error.code).toBe(slow.error.code);
      }),
      { numRuns: 2000 },
    );
  });

  it('applies the size cap and reports bad JSON like the schema path', () => {
    expect(decodeStreamEvent('x'.repeat(11), TURN, 10)).toEqual(expect.objectContaining({ kind: 'error', error: expect.objectContaining({ code: 'event_too_large' }) }));
    expect(decodeStreamEvent('{nope', TURN, 10)).toEqual(expect.objectContaining({ kind: 'error', error: expect.objectContaining({ code: 'invalid_event' }) }));
  });
});
