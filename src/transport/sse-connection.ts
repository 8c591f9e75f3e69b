/**
 * Size caps on the raw event stream. `@microsoft/fetch-event-source` 2.0.1 buffers a line
 * until it ends, however long (docs/faults.md row 32): the body it reads is wrapped so that a
 * line or an event block over its cap fails the stream with a typed error first.
 */
import { ProtocolError } from '../errors.js';

/** Size caps applied to the raw stream before any parsing. */
export interface StreamLimits {
  /** Longest line, bytes. */
  maxLineBytes: number;
  /** Largest event block (every line up to the blank line, with their line breaks), bytes. */
  maxEventBytes: number;
}

/** Derives byte caps from the event data cap (code units): UTF-8 needs at most 3 bytes per code unit. */
export function streamLimitsFor(maxEventSize: number): StreamLimits {
  const maxLineBytes = maxEventSize * 3 + 1024;
  return { maxLineBytes, maxEventBytes: maxLineBytes + 1024 };
}

/**
 * `response` with its `200` body capped: past a cap the body errors with `line_too_long`
 * or `event_too_large`, and the connection is cancelled. The whole lines before the
 * offending one still pass, so the events they complete apply.
 */
export function limitBody(response: Response, limits: StreamLimits): Response {
  if (response.status !== 200 || !response.body) return response;
  // Bytes of the current line, and of the current block's lines before it (each with its line break).
  let line = 0;
  let block = 0;
  // The last line break was a CR: an LF right after it belongs to it.
  let cr = false;
  const capped = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const length = chunk.length;
      // Fast path (nearly every chunk): no CR, and even one line made of the whole chunk would
      // stay under both caps. Only the state at the chunk's end is needed, found with native
      // scans from the end: the last line break, and the last blank line before it.
      if (!cr && line + block + length <= Math.min(limits.maxLineBytes, limits.maxEventBytes) && chunk.indexOf(13) < 0) {
        const last = chunk.lastIndexOf(10);
        if (last < 0) line += length;
        else {
          let p = last;
          // (A negative start would search from the end: guarded.)
          let before = p > 0 ? chunk.lastIndexOf(10, p - 1) : -1;
          // Walk back line by line until a line break ends an empty line (or the chunk's start).
          while (p >= 0 && !(p ? before === p - 1 : line === 0)) {
            p = before;
            before = p > 0 ? chunk.lastIndexOf(10, p - 1) : -1;
          }
          block = p < 0 ? block + line + last + 1 : last - p;
          line = length - last - 1;
        }
        controller.enqueue(chunk);
        return;
      }
      // Where the next LF and CR are (native scans, once per line at most); `>>> 0` turns "none" (-1) into a position past any chunk.
      let nextLF = -1;
      let nextCR = -1;
      for (let start = 0; start < length; ) {
        if (cr && chunk[start] === 10) {
          cr = false;
          start++;
          continue;
        }
        if (nextLF < start) nextLF = chunk.indexOf(10, start) >>> 0;
        if (nextCR < start) nextCR = chunk.indexOf(13, start) >>> 0;
        const end = Math.min(nextLF, nextCR, length);
        line += end - start;
        // Past the chunk's end this reads undefined: no CR.
        cr = chunk[end] === 13;
        // A blank line ends the block.
        if (end < length) block = line ? block + line + 1 : 0;
        if (line > limits.maxLineBytes || block + (end < length ? 0 : line) > limits.maxEventBytes) {
          // The readable side has no buffer: a chunk is only transformed for a pending read, which this fills before the error.
          controller.enqueue(chunk.subarray(0, start));
          throw new ProtocolError(line > limits.maxLineBytes ? 'line_too_long' : 'event_too_large', 'Stream line or event too large.');
        }
        if (end < length) line = 0;
        start = end + 1;
      }
      controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(capped), response);
}
