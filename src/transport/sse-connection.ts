/**
 * Size caps on the raw event stream. `@microsoft/fetch-event-source` 2.0.1 buffers a line
 * until it ends, however long (FAULTS.md row 32): the body it reads is wrapped so that a
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
 * or `event_too_large` (and the connection is cancelled). The whole lines before the
 * offending one still pass, so the events they complete apply.
 */
export function limitBody(response: Response, limits: StreamLimits): Response {
  const reader = response.status === 200 ? response.body?.getReader() : undefined;
  if (!reader) return response;
  let line = 0;
  let block = 0;
  // The last byte was a CR: an LF right after it belongs to the same line break.
  let cr = false;
  let failed: ProtocolError | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A pull of its own: erroring right after enqueueing would discard the good prefix.
      if (failed) return controller.error(failed);
      const { done, value } = await reader.read();
      if (done) return controller.close();
      // Where the current line starts in this chunk.
      let start = 0;
      for (let i = 0; i < value.length; i++) {
        const byte = value[i];
        const lineBreak = byte === 10 || byte === 13;
        if (cr && byte === 10) start = i + 1;
        else if (lineBreak && !line) {
          // A blank line ends the block.
          block = 0;
          start = i + 1;
        } else {
          block++;
          line = lineBreak ? 0 : line + 1;
          if (line > limits.maxLineBytes || block > limits.maxEventBytes) {
            failed = new ProtocolError(line > limits.maxLineBytes ? 'line_too_long' : 'event_too_large', 'Stream line or event too large.');
            await reader.cancel(failed).catch(() => {});
            return start ? controller.enqueue(value.subarray(0, start)) : controller.error(failed);
          }
          if (lineBreak) start = i + 1;
        }
        cr = byte === 13;
      }
      controller.enqueue(value);
    },
  });
  return new Response(body, response);
}
