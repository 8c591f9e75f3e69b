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
import { LifelineError, ProtocolError, TransportError } from '../errors.js';
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
  if (!hasDom()) {
    // Without them the library throws from inside its own callbacks and its promise never settles.
    return {
      kind: 'failed',
      failure: {
        error: new LifelineError(
          'invalid_argument',
          'Following a turn needs `window` and `document` (@microsoft/fetch-event-source 2.0.1 calls them); follow turns in the browser.',
        ),
        disposition: 'fatal',
      },
    };
  }
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

/** The globals fetch-event-source touches when an attempt ends. */
function hasDom(): boolean {
  const scope = globalThis as { window?: { clearTimeout?: unknown }; document?: { removeEventListener?: unknown } };
  return typeof scope.window?.clearTimeout === 'function' && typeof scope.document?.removeEventListener === 'function';
}

function failureOf(error: unknown): Failure {
  if (error instanceof ProtocolError) return { error, disposition: 'retry' };
  return networkFailure(error);
}

/**
 * Wraps a body so that a line or an event block over its cap errors the stream with a
 * {@link ProtocolError} before the oversized bytes reach the parser's buffer.
 */
function limitBody(body: ReadableStream<Uint8Array>, limits: StreamLimits): ReadableStream<Uint8Array> {
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
 * Tracks line and block sizes across chunks. CR, LF and CRLF all end a line; an empty
 * line ends an event block. The parser walks every byte anyway, so this must not: a
 * chunk smaller than both caps can only pass one through the line or block it carries
 * over, which the first and last line breaks and the last blank line (found from the
 * end, usually within the last event) tell. Only chunks that might break a cap get the
 * exact line-by-line walk, which also says how many bytes before the violation are good.
 */
export function createFrameLimiter(limits: StreamLimits): (chunk: Uint8Array) => FrameViolation | undefined {
  let line = 0;
  let block = 0;
  // A CR ended the previous line: an LF right after it is the same line break.
  let afterCR = false;

  /** True when `chunk` passes no cap for sure (state updated); false to take the exact walk (state untouched). */
  const quick = (chunk: Uint8Array): boolean => {
    const length = chunk.length;
    if (length > limits.maxLineBytes || length > limits.maxEventBytes) return false;
    // Scans stay short: CRs are looked for only after the last LF and before the first one.
    const lastLF = chunk.lastIndexOf(LF);
    const lastBreak = Math.max(lastLF, lastCRAfter(chunk, lastLF));
    if (lastBreak === -1) {
      if (line + length > limits.maxLineBytes || block + line + length > limits.maxEventBytes) return false;
      line += length;
      afterCR = false;
      return true;
    }
    const firstLF = chunk.indexOf(LF);
    const firstCR = (firstLF === -1 ? chunk : chunk.subarray(0, firstLF)).indexOf(CR);
    const firstBreak = firstCR === -1 ? firstLF : firstCR;
    if (line + firstBreak > limits.maxLineBytes) return false;
    const blank = lastBlankLine(chunk, lastBreak);
    // The carried block ends at this chunk's first blank line, at the latest at its last one.
    if (blank !== -1 && block + line + blank + 1 > limits.maxEventBytes) return false;
    const nextBlock = blank === -1 ? block + line + lastBreak + 1 : lastBreak - blank;
    if (nextBlock > limits.maxEventBytes) return false;
    block = nextBlock;
    line = length - lastBreak - 1;
    afterCR = chunk[length - 1] === CR;
    return true;
  };

  const lineTooLong = (size: number): ProtocolError =>
    new ProtocolError('line_too_long', `A stream line passed ${limits.maxLineBytes} bytes.`, {
      details: { size, limit: limits.maxLineBytes },
    });
  const eventTooLarge = (size: number): ProtocolError =>
    new ProtocolError('event_too_large', `A stream event passed ${limits.maxEventBytes} bytes.`, {
      details: { size, limit: limits.maxEventBytes },
    });
  return (chunk) => {
    if (quick(chunk)) return undefined;
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

/** Index of the last CR after `after` (-1 for none). */
function lastCRAfter(chunk: Uint8Array, after: number): number {
  const found = chunk.subarray(after + 1).lastIndexOf(CR);
  return found === -1 ? -1 : after + 1 + found;
}

/**
 * Index of the line break that ends the last empty line at or before `from`, or -1
 * (none, or it would need the previous chunk to tell). Walks back from the end: the
 * last blank line is usually within the last event.
 */
function lastBlankLine(chunk: Uint8Array, from: number): number {
  for (let position = from; position >= 1; position--) {
    const byte = chunk[position];
    if (byte !== LF && byte !== CR) continue;
    let before = position - 1;
    // CRLF is one break: the line ends before its CR.
    if (byte === LF && chunk[before] === CR) before -= 1;
    if (before < 0) return -1;
    const previous = chunk[before];
    if (previous === LF || previous === CR) return position;
    position = before;
  }
  return -1;
}
