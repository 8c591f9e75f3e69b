/**
 * The stream's size caps, checked against an exact reference: the capped body never
 * misses a line or block over its cap, whatever the chunking and line endings, leaves
 * honest streams alone, and lets the whole lines before the offending one through.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { limitBody } from '../../../src/transport/sse-connection.js';

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

/** Reads `chunks` through the capped body: the error code it ended with (if any) and the bytes that passed. */
async function readCapped(chunks: Uint8Array[], maxLineBytes: number, maxEventBytes: number): Promise<{ code?: string; passed: string }> {
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  const reader = limitBody(new Response(source, { status: 200 }), { maxLineBytes, maxEventBytes }).body!.getReader();
  const decoder = new TextDecoder();
  let passed = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { passed };
      passed += decoder.decode(value);
    }
  } catch (error) {
    return { code: (error as { code: string }).code, passed };
  }
}

describe('capped stream body', () => {
  it('fails with line_too_long exactly when a line is over maxLineBytes, whatever the chunking', async () => {
    await fc.assert(
      fc.asyncProperty(streamArb, fc.integer({ min: 1, max: 400 }), async ({ chunks, sizes }, maxLine) => {
        const { code } = await readCapped(chunks, maxLine, Number.MAX_SAFE_INTEGER);
        expect(code).toBe(sizes.maxLine > maxLine ? 'line_too_long' : undefined);
      }),
      { numRuns: 300 },
    );
  });

  it('fails with event_too_large exactly when a block is over maxEventBytes, whatever the chunking', async () => {
    await fc.assert(
      fc.asyncProperty(streamArb, fc.integer({ min: 1, max: 3000 }), async ({ chunks, sizes }, maxEvent) => {
        const { code } = await readCapped(chunks, Number.MAX_SAFE_INTEGER, maxEvent);
        expect(code).toBe(sizes.maxBlock > maxEvent ? 'event_too_large' : undefined);
      }),
      { numRuns: 300 },
    );
  });

  it('passes an honest stream unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(streamArb, async ({ chunks }) => {
        const { code, passed } = await readCapped(chunks, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
        expect(code).toBeUndefined();
        expect(passed).toBe(chunks.map((chunk) => new TextDecoder().decode(chunk)).join(''));
      }),
      { numRuns: 100 },
    );
  });

  it('keeps the whole lines before the violating one', async () => {
    const chunk = new TextEncoder().encode('data: 1\n\nid: 2\nxxxxxxxxxxxxxxxx');
    expect(await readCapped([chunk], 10, 1000)).toEqual({ code: 'line_too_long', passed: 'data: 1\n\nid: 2\n' });
  });

  it('pairs an LF with a CR only right after it, across chunks', async () => {
    // "a" ends with a CR; "bcd" with an LF that opens the next chunk; then a blank line. Blocks: 6 and 4 bytes.
    const chunks = ['a\rbcd', '\n\nxyz\n\n'].map((text) => new TextEncoder().encode(text));
    expect(await readCapped(chunks, 100, 6)).toEqual({ passed: 'a\rbcd\n\nxyz\n\n' });
    expect((await readCapped(chunks, 100, 5)).code).toBe('event_too_large');
  });

  it('leaves answers other than 200 alone', () => {
    const response = new Response(null, { status: 204 });
    expect(limitBody(response, { maxLineBytes: 1, maxEventBytes: 1 })).toBe(response);
  });
});
