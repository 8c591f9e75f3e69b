import type { TurnEvent } from '../../protocol/schemas.js';
import type { TurnLog } from '../log/turn-log.js';
import { FOLLOW_CHUNK_BYTES, sseFrame, type FeedHub, type TurnFeed } from './turn-feed.js';

export { FOLLOW_CHUNK_BYTES } from './turn-feed.js';

/** Most events read from the log per backlog chunk. */
const BACKLOG_PAGE_EVENTS = 2000;
const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode('event: heartbeat\ndata: {}\n\n');

export interface FollowOptions {
  log: TurnLog;
  feeds: FeedHub;
  turnId: string;
  /** Last seq the client has; the stream sends seq > after. */
  after: number;
  retryMs: number;
  /** The request's signal: the stream stops and leaves its feed when it aborts. */
  signal: AbortSignal;
}

/** What one pull produced: a chunk to send, and whether the stream is over after it. */
type Step = { chunk?: Uint8Array; done: boolean };

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  let total = 0;
  for (const part of parts) total += part.byteLength;
  const joined = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.byteLength;
  }
  return joined;
}

/**
 * One follower of a turn's feed: where it is, and the `retry:` line still to send. Each
 * `next()` answers one pull of the stream: the frames after its cursor from the feed
 * (shared, encoded once), or, when it is further behind than the feed's window, a page
 * it reads from the log itself; else it waits for the feed's next change.
 */
class FeedFollower {
  #cursor: number;
  #prefix: Uint8Array | undefined;
  #beat: number;
  readonly #options: FollowOptions;
  readonly #feed: TurnFeed;
  readonly #stop: AbortSignal;

  constructor(options: FollowOptions, feed: TurnFeed, stop: AbortSignal) {
    this.#options = options;
    this.#feed = feed;
    this.#stop = stop;
    this.#cursor = options.after;
    this.#beat = feed.beat;
    this.#prefix = encoder.encode(`retry: ${options.retryMs}\n\n`);
  }

  async next(): Promise<Step> {
    const feed = this.#feed;
    for (;;) {
      if (this.#stop.aborted) return { done: true };
      const frames = feed.framesAfter(this.#cursor, FOLLOW_CHUNK_BYTES);
      if (frames === undefined) return this.#backlog();
      const last = frames.at(-1);
      if (last !== undefined) {
        this.#cursor = last.seq;
        return this.#send(frames.map((frame) => frame.bytes));
      }
      // Nothing logged yet: send `retry:` at once so the client sees a live stream.
      if (this.#prefix !== undefined) return this.#send([]);
      if (feed.isOver(this.#cursor)) return { done: true };
      if (feed.beat !== this.#beat) {
        this.#beat = feed.beat;
        return { chunk: HEARTBEAT, done: false };
      }
      await feed.changed(this.#stop);
    }
  }

  /** A page the feed's window no longer holds, read and encoded for this follower alone. */
  async #backlog(): Promise<Step> {
    const { log, turnId } = this.#options;
    const page = await log.read(turnId, this.#cursor, BACKLOG_PAGE_EVENTS, FOLLOW_CHUNK_BYTES);
    const frames = page.events.map((event: TurnEvent) => sseFrame(event));
    const last = page.events.at(-1);
    if (last !== undefined) this.#cursor = last.seq;
    return this.#send(frames);
  }

  #send(frames: Uint8Array[]): Step {
    if (this.#prefix !== undefined) frames.unshift(this.#prefix);
    this.#prefix = undefined;
    return { chunk: concat(frames), done: this.#feed.isOver(this.#cursor) };
  }
}

/**
 * The body of a follow answer (section 2): `retry:`, then every logged event after
 * the resume point, then live events, heartbeats while idle, and the end after
 * `turn.end`. Written at the reader's pace: with a high-water mark of 0 the stream
 * takes the next chunk only when its reader (the Node adapter, after `drain`) asks, and
 * each chunk is bounded by {@link FOLLOW_CHUNK_BYTES}. A reader that stops reading costs
 * one chunk, never the turn.
 */
export function createFollowStream(options: FollowOptions): ReadableStream<Uint8Array> {
  const { signal, feeds } = options;
  const stop = new AbortController();
  const feed = feeds.join(options.turnId, options.after);
  const onAbort = (): void => release();
  let released = false;
  function release(): void {
    if (released) return;
    released = true;
    signal.removeEventListener('abort', onAbort);
    stop.abort();
    feeds.leave(feed);
  }
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) release();
  const follower = new FeedFollower(options, feed, stop.signal);

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const step = await follower.next();
        // Cancelled while reading: the stream is closed already, nothing more goes out.
        const cancelled = stop.signal.aborted;
        if (step.chunk !== undefined && !cancelled) controller.enqueue(step.chunk);
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
