import type { TurnLog } from '../log/turn-log.js';
import { sseFrame } from './sse-frames.js';
import { FOLLOW_CHUNK_BYTES, type FeedHub, type FeedReader, type TurnFeed } from './turn-feed.js';

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

/**
 * Where a follower writes its stream: a web stream's controller, or a connection an
 * adapter hands over (the Node adapter's `ServerResponse`). The bytes written may be
 * shared with other followers of the turn: a sink passes them on, it never changes them.
 */
export interface FollowSink {
  /** Writes `chunk`; false once the sink wants nothing more until it calls the follower's `resume()`. */
  write(chunk: Uint8Array): boolean;
  /** The stream is complete. */
  end(): void;
  /** The stream cannot go on (a backlog read failed); the connection should be cut. */
  fail(error: unknown): void;
}

/** A follow answer's body as an adapter drives it when it writes the stream itself. */
export interface FollowWriter {
  /** Starts writing into `sink`. */
  start(sink: FollowSink): void;
  /** The sink has room again (its `write` answered false before). */
  resume(): void;
  /** The connection went away: the follower leaves its feed, nothing more is written. */
  cancel(): void;
}

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
 * `unstarted` until a sink is given; `writing` while it writes; `reading` a backlog page
 * from the log; `waiting` at the feed's head with room (the feed wakes it); `full` until
 * its sink has room again; `done` once it ended, failed or was cancelled.
 */
type Phase = 'unstarted' | 'writing' | 'reading' | 'waiting' | 'full' | 'done';

/**
 * One follower of a turn's feed: where it is, and the `retry:` line still to send. It
 * writes while its sink has room: the frames after its cursor from the feed (shared,
 * encoded once), or, when it is further behind than the feed's window, a page it reads
 * from the log itself; at the head it waits for the feed to wake it. Nothing per event
 * is allocated for it beyond the write itself: no promise, timer or listener.
 */
class FeedFollower implements FeedReader, FollowWriter {
  #phase: Phase = 'unstarted';
  #cursor: number;
  #prefix: Uint8Array | undefined;
  #beat: number;
  #sink: FollowSink | undefined;
  /** Bytes handed to the sink so far: a wake answers what it wrote (the feed bounds its slices by it). */
  #sent = 0;
  readonly #options: FollowOptions;
  readonly #feed: TurnFeed;
  /** The request went away: the stream ends (a sink already given is closed), and the follower leaves its feed. */
  readonly #onAbort = (): void => {
    if (this.#sink === undefined) this.#leave();
    else if (this.#phase !== 'done') this.#end();
  };

  constructor(options: FollowOptions) {
    this.#options = options;
    this.#feed = options.feeds.join(options.turnId, options.after);
    this.#cursor = options.after;
    this.#beat = this.#feed.beat;
    this.#prefix = encoder.encode(`retry: ${options.retryMs}\n\n`);
    options.signal.addEventListener('abort', this.#onAbort, { once: true });
    if (options.signal.aborted) this.#leave();
  }

  get unstarted(): boolean {
    return this.#phase === 'unstarted';
  }

  get done(): boolean {
    return this.#phase === 'done';
  }

  start(sink: FollowSink): void {
    if (this.#phase !== 'unstarted') return;
    this.#sink = sink;
    this.#write();
  }

  resume(): void {
    if (this.#phase === 'full' || this.#phase === 'waiting') this.#write();
  }

  wake(): number {
    const before = this.#sent;
    if (this.#phase === 'waiting') this.#write();
    return this.#sent - before;
  }

  cancel(): void {
    this.#leave();
  }

  /** Writes steps while the sink has room; then waits for room, for the feed, or for a backlog page. */
  #write(): void {
    const feed = this.#feed;
    this.#phase = 'writing';
    for (;;) {
      const step = feed.stepAfter(this.#cursor, FOLLOW_CHUNK_BYTES);
      if (step === undefined) return this.#readBacklog();
      let room: boolean;
      if (step.chunks.length > 0) {
        this.#cursor = step.last;
        room = this.#send(step.chunks);
      } else if (this.#prefix !== undefined) {
        // Nothing logged yet: send `retry:` at once so the client sees a live stream.
        room = this.#send(step.chunks);
      } else if (feed.isOver(this.#cursor)) {
        return this.#end();
      } else if (feed.beat !== this.#beat) {
        this.#beat = feed.beat;
        room = this.#send([HEARTBEAT]);
      } else {
        this.#phase = 'waiting';
        feed.wait(this);
        return;
      }
      if (feed.isOver(this.#cursor)) return this.#end();
      if (!room) {
        this.#phase = 'full';
        return;
      }
    }
  }

  /** A page the feed's window no longer holds, read and encoded for this follower alone. */
  #readBacklog(): void {
    const { log, turnId } = this.#options;
    this.#phase = 'reading';
    log.read(turnId, this.#cursor, BACKLOG_PAGE_EVENTS, FOLLOW_CHUNK_BYTES).then(
      (page) => {
        if (this.#phase !== 'reading') return;
        const last = page.events.at(-1);
        // Nothing after the cursor although the feed is past it: the turn's log went away.
        if (last === undefined) return this.#end();
        this.#cursor = last.seq;
        const room = this.#send([concat(page.events.map(sseFrame))]);
        if (this.#feed.isOver(this.#cursor)) return this.#end();
        if (room) this.#write();
        else this.#phase = 'full';
      },
      (error: unknown) => {
        if (this.#phase !== 'reading') return;
        const sink = this.#sink as FollowSink;
        this.#leave();
        sink.fail(error);
      },
    );
  }

  #send(chunks: readonly Uint8Array[]): boolean {
    const sink = this.#sink as FollowSink;
    let room = true;
    if (this.#prefix !== undefined) {
      room = sink.write(this.#prefix);
      this.#sent += this.#prefix.byteLength;
    }
    this.#prefix = undefined;
    for (const chunk of chunks) {
      room = sink.write(chunk);
      this.#sent += chunk.byteLength;
    }
    return room;
  }

  #end(): void {
    const sink = this.#sink as FollowSink;
    this.#leave();
    sink.end();
  }

  #leave(): void {
    if (this.#phase === 'done') return;
    this.#phase = 'done';
    this.#options.signal.removeEventListener('abort', this.#onAbort);
    this.#feed.unwait(this);
    this.#options.feeds.leave(this.#feed);
  }
}

/** Follow bodies an adapter may write itself (see {@link takeFollowWriter}). */
const writable = new WeakMap<ReadableStream<Uint8Array>, FeedFollower>();

/**
 * The follower behind a follow answer's body, for an adapter that writes the stream to
 * its connection itself instead of reading the web stream (the Node adapter does: no
 * promise per event and follower). `undefined` for any other body, or one that was read.
 * Once taken, the web stream is never pulled: the writer is the body.
 */
export function takeFollowWriter(body: ReadableStream<Uint8Array>): FollowWriter | undefined {
  const follower = writable.get(body);
  if (follower === undefined || body.locked || !follower.unstarted) return undefined;
  writable.delete(body);
  return follower;
}

/** A web stream's controller as a sink: room while a read waits (high-water mark 0). */
function controllerSink(controller: ReadableStreamDefaultController<Uint8Array>): FollowSink {
  return {
    write(chunk) {
      controller.enqueue(chunk);
      return (controller.desiredSize ?? 0) > 0;
    },
    end() {
      try {
        controller.close();
      } catch {
        // already closed by its reader's cancel()
      }
    },
    fail(error) {
      controller.error(error);
    },
  };
}

/**
 * The body of a follow answer (section 2): `retry:`, then every logged event after
 * the resume point, then live events, heartbeats while idle, and the end after
 * `turn.end`. Written at the reader's pace: with a high-water mark of 0 the stream
 * takes the next step only when its reader (the Node adapter, after `drain`) asks, and
 * each step is bounded by {@link FOLLOW_CHUNK_BYTES}. A reader that stops reading costs
 * one step, never the turn.
 */
export function createFollowStream(options: FollowOptions): ReadableStream<Uint8Array> {
  const follower = new FeedFollower(options);
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(given) {
        controller = given;
      },
      pull() {
        // Aborted before anyone read: nothing to send.
        if (follower.done) controller?.close();
        else if (follower.unstarted && controller) follower.start(controllerSink(controller));
        else follower.resume();
      },
      cancel() {
        follower.cancel();
      },
    },
    { highWaterMark: 0 },
  );
  writable.set(stream, follower);
  return stream;
}
