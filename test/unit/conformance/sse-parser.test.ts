/** The suite's own SSE parser: WHATWG line rules, and the framing facts a browser would hide. */
import { describe, expect, it } from 'vitest';
import { createSseParser, type SseItem } from '../../../src/conformance/sse-parser.js';

function parse(chunks: readonly string[]): { items: SseItem[]; unterminated: boolean } {
  const items: SseItem[] = [];
  const parser = createSseParser((item) => items.push(item));
  for (const chunk of chunks) parser.feed(chunk);
  parser.end();
  return { items, unterminated: parser.unterminated };
}

const message = (fields: Partial<Extract<SseItem, { kind: 'message' }>>): SseItem => ({
  kind: 'message',
  id: undefined,
  event: undefined,
  data: '',
  dataLines: 0,
  unknownFields: [],
  ...fields,
});

describe('conformance SSE parser', () => {
  it('reads retry, numbered events and id-less heartbeats in stream order', () => {
    const { items, unterminated } = parse(['retry: 1000\n\nid: 1\nevent: turn.start\ndata: {"seq":1}\n\nevent: heartbeat\ndata: {}\n\n']);
    expect(items).toEqual([
      { kind: 'retry', value: '1000' },
      message({ id: '1', event: 'turn.start', data: '{"seq":1}', dataLines: 1 }),
      message({ event: 'heartbeat', data: '{}', dataLines: 1 }),
    ]);
    expect(unterminated).toBe(false);
  });

  it('gives the same items for LF, CRLF and CR line ends, whatever the chunking (a CRLF split across chunks too)', () => {
    const text = 'id: 7\nevent: delta\ndata: {"text":"日本😀"}\n\n: comment\n\n';
    const expected = parse([text]).items;
    expect(expected).toEqual([message({ id: '7', event: 'delta', data: '{"text":"日本😀"}', dataLines: 1 })]);
    for (const ending of ['\r\n', '\r']) {
      const variant = text.replaceAll('\n', ending);
      expect(parse([variant]).items).toEqual(expected);
      // One character per chunk splits every CRLF between two feeds.
      expect(parse(Array.from(variant)).items).toEqual(expected);
    }
  });

  it('counts data lines, keeps unknown field names, drops one leading space only, strips a BOM', () => {
    const { items } = parse(['\uFEFFdata:a\ndata:  b\nfoo: x\nid\n\n']);
    expect(items).toEqual([message({ id: '', data: 'a\n b', dataLines: 2, unknownFields: ['foo'] })]);
  });

  it('drops a block the stream ended inside, and says so', () => {
    const { items, unterminated } = parse(['id: 1\ndata: {}\n\nid: 2\ndata: {"half']);
    expect(items).toEqual([message({ id: '1', data: '{}', dataLines: 1 })]);
    expect(unterminated).toBe(true);
  });
});
