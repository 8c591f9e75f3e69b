/**
 * One attempt to follow a turn's event stream: exactly one `fetchEventSource` call.
 *
 * `@microsoft/fetch-event-source` 2.0.1 is used only as an SSE parser with a fetch
 * hook (see FAULTS.md): its own retry is disabled (every end of the attempt throws out
 * of `onclose`/`onerror`), its header copy is never sent (our `fetch` hook builds the
 * request from our headers, so a hostile `id:` it copied cannot break a later request),
 * and the body it reads is wrapped to cap line and event sizes, since its line buffer
 * has no limit. The reconnect loop, cursor and timing belong to the caller.
 */
import { fetchEventSource, type EventSourceMessage } from '@microsoft/fetch-event-source';
import { ProtocolError, TransportError } from '../errors.js';
import { failureFromResponse, networkFailure, type Failure } from './http.js';

const EVENT_STREAM = 'text/event-stream';

/** Size caps applied to the raw stream before any parsing. */
export interface StreamLimits {
  /** Longest line, bytes. */
  maxLineBytes: number;
  /** Largest event block (every line up to the blank line), bytes. */
  maxEventBytes: number;
}

/** Derives byte caps from the event data cap (code units): UTF-8 needs at most 3 bytes per code unit. */
export function streamLimitsFor(maxEventSize: number): StreamLimits {
  const maxLineBytes = maxEventSize * 3 + 1024;
  return { maxLineBytes, maxEventBytes: maxLineBytes + 1024 };
}

export interface SseAttemptOptions {
  url: string;
  /** The complete request headers, our `Last-Event-ID` included. */
  headers: Record<string, string>;
  fetch: typeof fetch;
  /** Aborting ends the attempt; the outcome is then `aborted`. */
  signal: AbortSignal;
  limits: StreamLimits;
  now: () => number;
  /** A `200 text/event-stream` answer arrived. */
  onOpen: () => void;
  /**
   * One dispatched message that carries data, or a heartbeat (type `heartbeat`).
   * Never called once `signal` aborted.
   */
  onMessage: (type: string, data: string) => void;
  /** The stream sent `retry:` (raw parsed value; the caller clamps it). */
  onRetry: (ms: number) => void;
}

/** How an attempt ended. */
export type SseOutcome =
  | { kind: 'aborted' }
  /** The body ended cleanly; whether that was after `turn.end` is the caller's business. */
  | { kind: 'closed' }
  /** `204`: the turn ended and nothing is after the cursor. */
  | { kind: 'no-content' }
  | { kind: 'failed'; failure: Failure };

/** Thrown out of the library's callbacks to end the attempt without its retry. */
const STOP = Symbol('lifeline.sse.stop');

/** Runs one attempt; never throws, never retries. */
export async function runSseAttempt(options: SseAttemptOptions): Promise<SseOutcome> {
  const { signal } = options;
  if (signal.aborted) return { kind: 'aborted' };
  let outcome: SseOutcome | undefined;

  const hookedFetch = async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    // The library's own header object (with the wire `last-event-id`) is deliberately dropped.
    const response = await options.fetch(options.url, {
      method: 'GET',
      headers: options.headers,
      ...(init?.signal ? { signal: init.signal } : {}),
    });
    if (response.status !== 200 || response.body === null) return response;
    return new Response(limitBody(response.body, options.limits), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };

  try {
    await fetchEventSource(options.url, {
      signal,
      openWhenHidden: true,
      fetch: hookedFetch,
      async onopen(response) {
        if (response.status === 200 && (response.headers.get('content-type') ?? '').toLowerCase().startsWith(EVENT_STREAM)) {
          options.onOpen();
          return;
        }
        if (response.status === 204) {
          outcome = { kind: 'no-content' };
        } else if (response.status === 200) {
          await response.body?.cancel().catch(() => undefined);
          const type = response.headers.get('content-type') ?? '(none)';
          outcome = {
            kind: 'failed',
            failure: {
              error: new TransportError('unexpected_content_type', `Expected ${EVENT_STREAM}, got ${type}.`, { status: 200 }),
              disposition: 'retry',
            },
          };
        } else {
          outcome = { kind: 'failed', failure: await failureFromResponse(response, options.now()) };
        }
        throw STOP;
      },
      onmessage(message: EventSourceMessage) {
        if (signal.aborted) return;
        if (message.retry !== undefined) options.onRetry(message.retry);
        if (message.event === 'heartbeat') options.onMessage('heartbeat', message.data);
        // Empty blocks, comments, `retry:`-only blocks and `event:` without data carry nothing.
        else if (message.data !== '') options.onMessage(message.event, message.data);
      },
      onclose() {
        outcome ??= { kind: 'closed' };
        throw STOP;
      },
      onerror(error: unknown) {
        if (error !== STOP && outcome === undefined) outcome = { kind: 'failed', failure: failureOf(error) };
        throw STOP;
      },
    });
  } catch (error) {
    if (error !== STOP && outcome === undefined) outcome = { kind: 'failed', failure: failureOf(error) };
  }
  if (signal.aborted) return { kind: 'aborted' };
  return outcome ?? { kind: 'closed' };
}

function failureOf(error: unknown): Failure {
  if (error instanceof ProtocolError) return { error, disposition: 'retry' };
  return networkFailure(error);
}

/**
 * Wraps a body so that a line or an event block over its cap errors the stream with a
 * {@link ProtocolError} before the oversized bytes reach the parser's buffer.
 */
export function limitBody(body: ReadableStream<Uint8Array>, limits: StreamLimits): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const check = createFrameLimiter(limits);
  let failed: ProtocolError | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (failed !== undefined) {
        // A separate pull: erroring right after enqueueing would discard the good prefix.
        controller.error(failed);
        return;
      }
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      const verdict = check(value);
      if (verdict === undefined) {
        controller.enqueue(value);
        return;
      }
      failed = verdict.error;
      await reader.cancel(verdict.error).catch(() => undefined);
      // Lines before the oversized one are intact: let their events through.
      if (verdict.keep > 0) controller.enqueue(value.subarray(0, verdict.keep));
      else controller.error(verdict.error);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

const LF = 10;
const CR = 13;

/** A cap was passed: the error, and how many bytes of the chunk (whole lines) are still good. */
export interface FrameViolation {
  error: ProtocolError;
  keep: number;
}

/**
 * Tracks line and block sizes across chunks with native `indexOf` scans (the parser
 * walks every byte anyway; this must not double that cost). CR, LF and CRLF all end
 * a line; an empty line ends an event block.
 */
export function createFrameLimiter(limits: StreamLimits): (chunk: Uint8Array) => FrameViolation | undefined {
  let line = 0;
  let block = 0;
  // A CR ended the previous line: an LF right after it is the same line break.
  let afterCR = false;
  const lineTooLong = (size: number): ProtocolError =>
    new ProtocolError('line_too_long', `A stream line passed ${limits.maxLineBytes} bytes.`, {
      details: { size, limit: limits.maxLineBytes },
    });
  const eventTooLarge = (size: number): ProtocolError =>
    new ProtocolError('event_too_large', `A stream event passed ${limits.maxEventBytes} bytes.`, {
      details: { size, limit: limits.maxEventBytes },
    });
  return (chunk) => {
    const length = chunk.length;
    let position = 0;
    let nextLF = chunk.indexOf(LF);
    let nextCR = chunk.indexOf(CR);
    while (position < length) {
      if (nextLF !== -1 && nextLF < position) nextLF = chunk.indexOf(LF, position);
      if (nextCR !== -1 && nextCR < position) nextCR = chunk.indexOf(CR, position);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (end === -1) break;
      if (afterCR && end === position && line === 0 && chunk[end] === LF) {
        afterCR = false;
        position = end + 1;
        continue;
      }
      afterCR = chunk[end] === CR;
      const size = line + end - position;
      if (size > limits.maxLineBytes) return { error: lineTooLong(size), keep: position };
      if (size === 0) {
        block = 0;
      } else {
        block += size + 1;
        if (block > limits.maxEventBytes) return { error: eventTooLarge(block), keep: position };
      }
      line = 0;
      position = end + 1;
    }
    if (position < length) {
      afterCR = false;
      const start = position;
      line += length - position;
      if (line > limits.maxLineBytes) return { error: lineTooLong(line), keep: start };
      if (block + line > limits.maxEventBytes) return { error: eventTooLarge(block + line), keep: start };
    }
    return undefined;
  };
}
