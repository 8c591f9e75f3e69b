import type { TurnEvent } from '../../protocol/schemas.js';
import { isExpiredTurn, type TurnLog } from '../log/turn-log.js';

/** Most events read from the log per chunk written. */
const FOLLOW_PAGE_EVENTS = 2000;
/**
 * Most event data per chunk written (the log's page bytes, see `eventSize`), unless one
 * event alone is larger. The stream is pulled only when its reader asks for more, so a
 * connection holds at most the chunk in hand plus what its socket buffered before it
 * reported full: about 200 KiB of UTF-8 at worst, well under the protocol's 1 MiB bound
 * per connection, however large the turn and however slow the reader.
 */
export const FOLLOW_CHUNK_BYTES = 64 * 1024;

/** One SSE message for a logged event: `id` = seq, `event` = type, one line of JSON data. */
function sseMessage(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

const HEARTBEAT = 'event: heartbeat\ndata: {}\n\n';

export interface FollowOptions {
  log: TurnLog;
  turnId: string;
  /** Last seq the client has; the stream sends seq > after. */
  after: number;
  retryMs: number;
  heartbeatMs: number;
  /** The request's signal: the loop stops and releases its log waiters when it aborts. */
  signal: AbortSignal;
}

/** What one pull produced: a chunk to send, and whether the stream is over after it. */
type Step = { chunk?: string; done: boolean };

/**
 * The follow loop's state: where the reader is, and the `retry:` line still to send.
 * Each `next()` is one answer to one pull of the stream.
 */
class FollowCursor {
  #cursor: number;
  #prefix: string;
  readonly #options: FollowOptions;
  readonly #stop: AbortSignal;

  constructor(options: FollowOptions, stop: AbortSignal) {
    this.#options = options;
    this.#stop = stop;
    this.#cursor = options.after;
    this.#prefix = `retry: ${options.retryMs}\n\n`;
  }

  async next(): Promise<Step> {
    const { log, turnId, heartbeatMs } = this.#options;
    let waited = false;
    for (;;) {
      if (this.#stop.aborted) return { done: true };
      const page = await log.read(turnId, this.#cursor, FOLLOW_PAGE_EVENTS, FOLLOW_CHUNK_BYTES);
      if (page.events.length > 0) return this.#eventsChunk(page.events);
      if (this.#prefix !== '') {
        // Nothing logged yet: send `retry:` at once so the client sees a live stream.
        return { chunk: this.#takePrefix(), done: false };
      }
      if (waited) {
        // The wait ended with nothing new: a timeout, unless the turn ended or vanished.
        const turn = await log.getTurn(turnId);
        if (turn === undefined || isExpiredTurn(turn) || turn.endedAt !== undefined) return { done: true };
        return { chunk: HEARTBEAT, done: false };
      }
      await log.waitForEvents(turnId, this.#cursor, { signal: this.#stop, timeoutMs: heartbeatMs });
      waited = true;
    }
  }

  #takePrefix(): string {
    const prefix = this.#prefix;
    this.#prefix = '';
    return prefix;
  }

  #eventsChunk(events: readonly TurnEvent[]): Step {
    let chunk = this.#takePrefix();
    let done = false;
    for (const event of events) {
      chunk += sseMessage(event);
      this.#cursor = event.seq;
      if (event.type === 'turn.end') done = true;
    }
    return { chunk, done };
  }
}

/**
 * The body of a follow answer (section 2): `retry:`, then every logged event after
 * the resume point, then live events, heartbeats while idle, and the end after
 * `turn.end`. Written at the reader's pace: with a high-water mark of 0 the stream
 * reads the log only when its reader (the Node adapter, after `drain`) asks for the
 * next chunk, and each chunk is one log page bounded by {@link FOLLOW_CHUNK_BYTES}.
 * A reader that stops reading costs one chunk, never the turn.
 */
export function createFollowStream(options: FollowOptions): ReadableStream<Uint8Array> {
  const { signal } = options;
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const release = (): void => {
    signal.removeEventListener('abort', onAbort);
    stop.abort();
  };
  if (signal.aborted) stop.abort();
  const cursor = new FollowCursor(options, stop.signal);

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const step = await cursor.next();
        // Cancelled while reading: the stream is closed already, nothing more goes out.
        const cancelled = stop.signal.aborted;
        if (step.chunk !== undefined && !cancelled) controller.enqueue(encoder.encode(step.chunk));
        if (!step.done && !cancelled) return;
        release();
        // The reader may already have cancelled the stream, which closes it.
        try {
          controller.close();
        } catch {
          // already closed by cancel()
        }
      },
      cancel() {
        release();
      },
    },
    { highWaterMark: 0 },
  );
}
