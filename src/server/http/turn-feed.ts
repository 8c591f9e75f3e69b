import type { TurnEvent } from '../../protocol/schemas.js';
import { isExpiredTurn, type TurnLog } from '../log/turn-log.js';

/** Most events read from the log per page. */
const PAGE_EVENTS = 2000;
/**
 * Most event data per page read, and per chunk a follower is handed, unless one event
 * alone is larger. A follower is pulled only when its socket asks for more, so it holds at
 * most one chunk plus what its socket buffered: well under the protocol's 1 MiB bound per
 * connection (docs/protocol.md §8), however large the turn and however slow the reader.
 */
export const FOLLOW_CHUNK_BYTES = 64 * 1024;
/** Encoded frames a feed keeps for followers that are a little behind; older ones come from the log. */
const WINDOW_BYTES = 1024 * 1024;

const encoder = new TextEncoder();

/** One SSE message for a logged event: `id` = seq, `event` = type, one line of JSON data. */
export function sseFrame(event: TurnEvent): Uint8Array {
  return encoder.encode(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

interface Frame {
  seq: number;
  bytes: Uint8Array;
}

/**
 * The one reader of a live turn's log on this instance: it waits on the log, reads each
 * new page once, encodes each event to its SSE frame once, and hands the frames to every
 * follower of the turn here. Followers cost the log nothing per event, whatever their
 * number. It also keeps the turn's idle beat: each time a wait of one heartbeat passes
 * with nothing new, `beat` moves and every idle follower sends a heartbeat.
 */
export class TurnFeed {
  readonly turnId: string;
  readonly #log: TurnLog;
  readonly #heartbeatMs: number;
  readonly #stop = new AbortController();
  readonly #listeners = new Set<() => void>();
  /** Resolves the feed's pause once a follower waits for it (see `#run`). */
  #onDemand: (() => void) | undefined;
  /** Recent frames, oldest first, at most WINDOW_BYTES. */
  #frames: Frame[] = [];
  #windowBytes = 0;
  /** Last seq read from the log. */
  #head: number;
  /** Seq of turn.end once read. */
  #endSeq: number | undefined;
  /** The turn is gone (expired, unknown) or the log failed: followers close. */
  #gone = false;
  #beat = 0;
  subscribers = 0;

  constructor(log: TurnLog, turnId: string, after: number, heartbeatMs: number, onError: (error: unknown) => void) {
    this.#log = log;
    this.turnId = turnId;
    this.#head = after;
    this.#heartbeatMs = heartbeatMs;
    this.#run().catch((error: unknown) => {
      if (!this.#stop.signal.aborted) onError(error);
      this.#gone = true;
      this.#notify();
    });
  }

  /** True once the turn went away or the log failed: a new follower needs a new feed. */
  get gone(): boolean {
    return this.#gone;
  }

  get beat(): number {
    return this.#beat;
  }

  /** True once no more frames will come: after turn.end (for a follower that has it), or the turn went away. */
  isOver(cursor: number): boolean {
    return this.#gone || (this.#endSeq !== undefined && cursor >= this.#endSeq);
  }

  /**
   * Frames after `cursor` up to about `maxBytes`, or `undefined` when the window no
   * longer holds the next one (the follower reads the log itself until it catches up).
   */
  framesAfter(cursor: number, maxBytes: number): Frame[] | undefined {
    const first = this.#frames[0];
    if (cursor >= this.#head) return [];
    if (first === undefined || first.seq > cursor + 1) return undefined;
    const taken: Frame[] = [];
    let bytes = 0;
    for (let i = cursor + 1 - first.seq; i < this.#frames.length; i++) {
      const frame = this.#frames[i] as Frame;
      bytes += frame.bytes.byteLength;
      if (taken.length > 0 && bytes > maxBytes) break;
      taken.push(frame);
    }
    return taken;
  }

  /** Resolves at the feed's next change (frames, beat, end) or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#listeners.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#listeners.add(done);
      signal.addEventListener('abort', done, { once: true });
      this.#onDemand?.();
    });
  }

  stop(): void {
    this.#stop.abort();
    this.#onDemand?.();
  }

  /**
   * Resolves once some follower waits for the feed. A feed reads only for followers at
   * its head: followers still sending what they have (or paused by their socket) need
   * nothing new, and ones behind its window read the log themselves.
   */
  #demand(): Promise<void> {
    if (this.#listeners.size > 0 || this.#stop.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onDemand = () => {
        this.#onDemand = undefined;
        resolve();
      };
    });
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }

  #add(events: readonly TurnEvent[]): void {
    for (const event of events) {
      // The page continues the log where the feed stands; anything else is a bug of the log.
      if (event.seq !== this.#head + 1) continue;
      const bytes = sseFrame(event);
      this.#frames.push({ seq: event.seq, bytes });
      this.#windowBytes += bytes.byteLength;
      this.#head = event.seq;
      if (event.type === 'turn.end') this.#endSeq = event.seq;
    }
    while (this.#windowBytes > WINDOW_BYTES && this.#frames.length > 1) {
      this.#windowBytes -= (this.#frames.shift() as Frame).bytes.byteLength;
    }
    this.#notify();
  }

  async #run(): Promise<void> {
    const log = this.#log;
    const signal = this.#stop.signal;
    let waited = false;
    // What the last wait brought along (a store may answer its new events): the next page, without a read.
    let woken: TurnEvent[] | undefined;
    while (!signal.aborted && this.#endSeq === undefined && !this.#gone) {
      await this.#demand();
      if (signal.aborted) break;
      const page = woken?.[0]?.seq === this.#head + 1 ? { events: woken, hasMore: false } : await log.read(this.turnId, this.#head, PAGE_EVENTS, FOLLOW_CHUNK_BYTES);
      woken = undefined;
      // Events and none of them turn.end: the turn was live a moment ago, the wait below notices what comes next.
      const justRead = page.events.length > 0;
      if (page.events.length > 0) {
        this.#add(page.events);
        if (page.hasMore) continue;
      } else if (waited) {
        // A whole heartbeat with nothing new: the turn ended or went away, or it is idle.
        const turn = await log.getTurn(this.turnId);
        if (turn === undefined || isExpiredTurn(turn)) this.#gone = true;
        else if (turn.endedAt === undefined) this.#beat++;
        this.#notify();
      }
      if (signal.aborted || this.#endSeq !== undefined || this.#gone) break;
      woken = (await log.waitForEvents(this.turnId, this.#head, { signal, timeoutMs: this.#heartbeatMs, justRead })) ?? undefined;
      waited = true;
    }
  }
}

/** The feeds of this instance, one per followed turn, alive while anyone follows it. */
export class FeedHub {
  readonly #feeds = new Map<string, TurnFeed>();
  readonly #log: TurnLog;
  readonly #heartbeatMs: number;
  readonly #onError: (error: unknown) => void;

  constructor(log: TurnLog, heartbeatMs: number, onError: (error: unknown) => void) {
    this.#log = log;
    this.#heartbeatMs = heartbeatMs;
    this.#onError = onError;
  }

  /** The turn's feed, started from `after` if nobody follows it here yet. */
  join(turnId: string, after: number): TurnFeed {
    let feed = this.#feeds.get(turnId);
    if (!feed || feed.gone) {
      feed = new TurnFeed(this.#log, turnId, after, this.#heartbeatMs, this.#onError);
      this.#feeds.set(turnId, feed);
    }
    feed.subscribers++;
    return feed;
  }

  /** A follower left; the last one stops the feed. */
  leave(feed: TurnFeed): void {
    feed.subscribers--;
    if (feed.subscribers > 0) return;
    feed.stop();
    if (this.#feeds.get(feed.turnId) === feed) this.#feeds.delete(feed.turnId);
  }
}
