import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEventParser } from '../../../src/transport/sse-connection.js';

type Message = [event: string, data: string, retry: number | undefined];

function parse(chunks: (string | Uint8Array)[]): Message[] {
  const out: Message[] = [];
  const feed = createEventParser((event, data, retry) => out.push([event, data, retry]));
  const encoder = new TextEncoder();
  for (const chunk of chunks) feed(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
  return out;
}

describe('event-stream parser', () => {
  it('dispatches at blank lines with event, joined data and retry', () => {
    expect(parse(['event: delta\ndata: a\ndata: b\n\n', 'retry: 1500\ndata:x\n\n', ': comment\n\n'])).toEqual([
      ['delta', 'a\nb', undefined],
      ['', 'x', 1500],
      ['', '', undefined],
    ]);
  });

  it('accepts CR, LF and CRLF, also when a CRLF is split between chunks', () => {
    expect(parse(['data: 1\r', '\n\r', '\ndata: 2\r\rdata: 3\n\n'])).toEqual([
      ['', '1', undefined],
      ['', '2', undefined],
      ['', '3', undefined],
    ]);
  });

  it('ignores lines without a colon, id lines and a retry that is not a number; drops one space only', () => {
    expect(parse(['data\nid: 7\nretry: soon\ndata:  two spaces\n\n'])).toEqual([['', ' two spaces', undefined]]);
  });

  it('keeps a character whose UTF-8 bytes are split between chunks, and never dispatches an unfinished block', () => {
    const bytes = new TextEncoder().encode('data: é€😀\n\ndata: cut');
    const chunks = [...bytes].map((byte) => Uint8Array.of(byte));
    expect(parse(chunks)).toEqual([['', 'é€😀', undefined]]);
  });

  it('gives the same messages however the stream is cut into chunks', () => {
    const stream = 'event: a\r\ndata: 1\r\n\r\ndata: x\rdata: y\r\r: c\n\nretry: 9\ndata: ü\n\n';
    const whole = parse([stream]);
    fc.assert(
      fc.property(fc.array(fc.nat(stream.length), { maxLength: 8 }), (cuts) => {
        const bytes = new TextEncoder().encode(stream);
        const points = [...new Set(cuts.map((cut) => Math.min(cut, bytes.length)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let start = 0;
        for (const point of [...points, bytes.length]) {
          chunks.push(bytes.subarray(start, point));
          start = point;
        }
        expect(parse(chunks)).toEqual(whole);
      }),
    );
    expect(whole).toEqual([
      ['a', '1', undefined],
      ['', 'x\ny', undefined],
      ['', '', undefined],
      ['', 'ü', 9],
    ]);
  });
});
