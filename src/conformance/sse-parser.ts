/**
 * A small Server-Sent Events parser written for the conformance suite. It follows the
 * WHATWG rules a browser applies (lines end in CRLF, LF or CR; one leading space after
 * the colon is dropped; a blank line ends a message; `:` starts a comment), but reports
 * more than a browser would: whether a message had an `id:` line at all, how many
 * `data:` lines it had, and `retry:` fields in stream order. The suite judges framing
 * from that, so it cannot share a parser with the client it is meant to hold to account.
 */

/** One message (a block ended by a blank line that carried at least one field). */
export interface SseMessage {
  kind: 'message';
  /** The `id:` value, or `undefined` when the block had no `id:` line. */
  id: string | undefined;
  /** The `event:` value, or `undefined` when absent (a browser then calls it `message`). */
  event: string | undefined;
  /** The `data:` lines joined with `\n`. */
  data: string;
  /** Number of `data:` lines (the protocol sends exactly one per event). */
  dataLines: number;
  /** Field names other than id/event/data/retry seen in this block. */
  unknownFields: string[];
}

/** A `retry:` field, reported where it occurs in the stream. */
export interface SseRetry {
  kind: 'retry';
  /** The raw value (the protocol sends decimal milliseconds). */
  value: string;
}

export type SseItem = SseMessage | SseRetry;

/** Incremental parser: feed decoded text as it arrives, then `end()`. */
export interface SseParser {
  feed(text: string): void;
  /** The stream closed: a block not ended by a blank line is dropped, as a browser does. */
  end(): void;
  /** True when the stream ended inside a block (a message not closed by a blank line). */
  readonly unterminated: boolean;
}

interface Block {
  id: string | undefined;
  event: string | undefined;
  data: string[];
  fields: number;
  unknownFields: string[];
}

const emptyBlock = (): Block => ({ id: undefined, event: undefined, data: [], fields: 0, unknownFields: [] });

/** Creates a parser that calls `onItem` for every message and `retry:` field, in order. */
export function createSseParser(onItem: (item: SseItem) => void): SseParser {
  let pending = '';
  let block = emptyBlock();
  let first = true;
  let unterminated = false;
  // A CR at the end of a chunk may be the first half of a CRLF split across chunks.
  let skipLeadingLf = false;

  function field(line: string): void {
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    block.fields++;
    if (name === 'id') block.id = value;
    else if (name === 'event') block.event = value;
    else if (name === 'data') block.data.push(value);
    else if (name === 'retry') onItem({ kind: 'retry', value });
    else block.unknownFields.push(name);
  }

  function line(text: string): void {
    if (text !== '') return field(text);
    const ended = block;
    block = emptyBlock();
    const carried = ended.id !== undefined || ended.event !== undefined || ended.data.length > 0;
    if (!carried) return;
    onItem({
      kind: 'message',
      id: ended.id,
      event: ended.event,
      data: ended.data.join('\n'),
      dataLines: ended.data.length,
      unknownFields: ended.unknownFields,
    });
  }

  return {
    feed(text) {
      if (first && text.length > 0) {
        first = false;
        if (text.startsWith('\uFEFF')) text = text.slice(1);
      }
      if (skipLeadingLf && text.startsWith('\n')) text = text.slice(1);
      skipLeadingLf = false;
      pending += text;
      let start = 0;
      for (let i = 0; i < pending.length; i++) {
        const char = pending[i];
        if (char !== '\r' && char !== '\n') continue;
        line(pending.slice(start, i));
        if (char === '\r') {
          if (i + 1 === pending.length) skipLeadingLf = true;
          else if (pending[i + 1] === '\n') i++;
        }
        start = i + 1;
      }
      pending = pending.slice(start);
    },
    end() {
      unterminated = pending.length > 0 || block.fields > 0;
      pending = '';
      block = emptyBlock();
    },
    get unterminated() {
      return unterminated;
    },
  };
}
