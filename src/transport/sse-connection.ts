/**
 * One attempt to follow a turn's event stream: one `fetch`, its body read as
 * `text/event-stream`. The reconnect loop, cursor and timing belong to the caller; this
 * never retries. The raw bytes pass a frame limiter before the parser sees them, so a
 * line or event over its cap fails the attempt without ever being buffered whole.
 */
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

/** Runs one attempt; never throws, never retries. Settles as soon as `signal` aborts. */
export async function runSseAttempt(options: SseAttemptOptions): Promise<SseOutcome> {
  const { signal } = options;
  if (signal.aborted) return { kind: 'aborted' };
  const aborted = new Promise<SseOutcome>((resolve) => signal.addEventListener('abort', () => resolve({ kind: 'aborted' }), { once: true }));
  const outcome = await Promise.race([
    attempt(options).catch(
      (error: unknown): SseOutcome => ({ kind: 'failed', failure: error instanceof ProtocolError ? { error, disposition: 'retry' } : networkFailure(error) }),
    ),
    aborted,
  ]);
  return signal.aborted ? { kind: 'aborted' } : outcome;
}

async function attempt(options: SseAttemptOptions): Promise<SseOutcome> {
  const { signal, url } = options;
  try {
    new URL(url, (globalThis as { location?: { href?: string } }).location?.href);
  } catch {
    // Outside a page a relative URL resolves against nothing: that is final, not a network blip.
    return {
      kind: 'failed',
      failure: { error: new LifelineError('invalid_argument', `Cannot follow ${url} outside a page: baseUrl must be absolute there.`), disposition: 'fatal' },
    };
  }
  const response = await options.fetch(url, { method: 'GET', headers: options.headers, signal });
  const { status, body } = response;
  const type = response.headers.get('content-type');
  if (status !== 200 || !(type ?? '').toLowerCase().startsWith(EVENT_STREAM)) {
    if (status === 204) return { kind: 'no-content' };
    if (status !== 200) return { kind: 'failed', failure: await failureFromResponse(response, options.now()) };
    await body?.cancel().catch(() => undefined);
    return {
      kind: 'failed',
      failure: { error: new TransportError('unexpected_content_type', `Expected ${EVENT_STREAM}, got ${type ?? '(none)'}.`, { status }), disposition: 'retry' },
    };
  }
  options.onOpen();
  if (body === null) throw new TypeError('The event stream has no body.');
  const reader = body.getReader();
  signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
  const check = createFrameLimiter(options.limits);
  const feed = createEventParser((event, data, retry) => {
    if (signal.aborted) return;
    if (retry !== undefined) options.onRetry(retry);
    if (event === 'heartbeat') options.onMessage(event, data);
    // Empty blocks, comments, `retry:`-only blocks and `event:` without data carry nothing.
    else if (data !== '') options.onMessage(event, data);
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { kind: 'closed' };
    const violation = check(value);
    if (violation === undefined) {
      feed(value);
      continue;
    }
    // Lines before the oversized one are intact: their events go through first.
    feed(value.subarray(0, violation.keep));
    await reader.cancel(violation.error).catch(() => undefined);
    throw violation.error;
  }
}

/**
 * The event-stream parser: decodes chunks (UTF-8, split characters carried over), cuts
 * lines at CR, LF or CRLF and dispatches a message at every blank line with its `event`
 * (`''` when unnamed), its `data` lines joined by LF, and `retry` when the block set one.
 * Lines without a colon and comments (leading colon) are ignored; `id` is too, since the
 * cursor is the client's own. One space after the colon is dropped. Line breaks are found
 * with `indexOf`, not byte by byte, and a CR search only reruns once passed: streams rarely
 * hold a CR at all.
 */
export function createEventParser(dispatch: (event: string, data: string, retry: number | undefined) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let partial = '';
  let afterCR = false;
  let event = '';
  let data = '';
  let retry: number | undefined;
  const line = (text: string): void => {
    if (text === '') {
      const block = { event, data, retry };
      event = '';
      data = '';
      retry = undefined;
      dispatch(block.event, block.data, block.retry);
      return;
    }
    const colon = text.indexOf(':');
    if (colon <= 0) return;
    const value = text.slice(colon + (text.charCodeAt(colon + 1) === 32 ? 2 : 1));
    switch (text.slice(0, colon)) {
      case 'data':
        data = data === '' ? value : `${data}\n${value}`;
        break;
      case 'event':
        event = value;
        break;
      case 'retry': {
        const ms = parseInt(value, 10);
        if (!Number.isNaN(ms)) retry = ms;
      }
    }
  };
  return (chunk) => {
    const text = decoder.decode(chunk, { stream: true });
    const length = text.length;
    let position = 0;
    let nextCR = text.indexOf('\r');
    while (position < length) {
      if (afterCR) {
        afterCR = false;
        if (text.charCodeAt(position) === LF) {
          position += 1;
          continue;
        }
      }
      if (nextCR !== -1 && nextCR < position) nextCR = text.indexOf('\r', position);
      const nextLF = text.indexOf('\n', position);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (end === -1) break;
      afterCR = end === nextCR;
      const whole = partial + text.slice(position, end);
      partial = '';
      position = end + 1;
      line(whole);
    }
    if (position < length) partial += text.slice(position);
  };
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
