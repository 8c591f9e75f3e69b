import type { TurnEvent } from '../../protocol/schemas.js';
import { batchOf, sseText, type Batch } from './sse-frames.js';
import { isExpiredTurn, type TurnLog } from '../log/turn-log.js';

/** Most events read from the log per page. */
const PAGE_EVENTS = 2000;
/**
 * Most event data per page read, and per step a follower writes, unless one event alone
 * is larger. A follower writes its next step only once its sink has room again, so it
 * holds at most one step plus what its socket buffered: well under the protocol's 1 MiB
 * bound per connection (docs/protocol.md §8), however large the turn and however slow
 * the reader.
 */
export const FOLLOW_CHUNK_BYTES = 64 * 1024;
/** Encoded frames a feed keeps for followers that are a little behind; older ones come from the log. */
const WINDOW_BYTES = 1024 * 1024;
/**
 * Followers woken in one go before the feed lets the event loop poll I/O: a fan-out to
 * thousands of sockets in one synchronous burst would keep every other request (a
 * replay, a submission) waiting until the last socket was written. Each wake is one
 * socket write at least (a syscall, whatever its size), so the slice is counted in
 * followers. At 1 000 followers of one turn on two busy cores (bench/server-path.ts, a
 * full replay's p50 under that load over the idle one's, median of three rounds per
 * run): slices of 64 kept a replay waiting 2.2-6.3 ms p50 to reach its handler; of 16,
 * the ratio was 1.55-3.49 on Redis (median of 11 runs 2.07) and 1.32-2.32 on the memory
 * log (2.04); of 4, 1.08-2.12 (1.63) and 1.38-2.44 (1.63), with CPU per delivered event
 * at 10 and 50 followers unchanged within the noise. A setImmediate per 4 writes costs
 * little beside them.
 */
const WAKE_SLICE = 4;
/**
 * Bytes written in one slice before it ends early: followers catching up write up to
 * FOLLOW_CHUNK_BYTES per step, several steps per wake while their socket takes them, and
 * copying that much into the kernel takes as long as many small writes.
 */
const SLICE_BYTES = 256 * 1024;

/** Lets the event loop poll I/O before the rest of a fan-out (setImmediate where the platform has it). */
const yieldToIo: () => Promise<void> =
  typeof setImmediate === 'function' ? () => new Promise((resolve) => setImmediate(resolve)) : () => new Promise((resolve) => setTimeout(resolve, 0));

/** What a follower writes next: shared views of the feed's frames, up to seq `last`. */
export interface FeedStep {
  chunks: Uint8Array[];
  last: number;
}

/** A follower as its feed sees it: woken when the feed moved (frames, beat, end). */
export interface FeedReader {
  /** Writes what the feed has for it; answers the bytes written (the feed's slices are bounded by them). */
  wake(): number;
}

/**
 * The one reader of a live turn's log on this instance: it waits on the log, reads each
 * new page once, encodes it to SSE frames once, and wakes the followers of the turn
 * here that wait at its head; each writes the same shared bytes. Followers cost the log
 * nothing per event, whatever their number. It also keeps the turn's idle beat: each
 * time a wait of one heartbeat passes with nothing new, `beat` moves and every idle
 * follower sends a heartbeat.
 */
export class TurnFeed {
  readonly turnId: string;
  readonly #log: TurnLog;
  readonly #heartbeatMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #stop = new AbortController();
  /** Followers at the feed's head with room to write: woken at its next change. */
  readonly #waiting = new Set<FeedReader>();
  /** Resolves the feed's pause once a follower waits for it (see `#run`). */
  #onDemand: (() => void) | undefined;
  /** Recent frames in batches, oldest first, at most about WINDOW_BYTES. */
  #batches: Batch[] = [];
  #windowBytes = 0;
  /** Last seq read from the log. */
  #head: number;
  /** Seq of turn.end once read. */
  #endSeq: number | undefined;
  /** The turn is gone (expired, unknown) or the log failed: followers close. */
  #gone = false;
  #beat = 0;
  /** A wake-up is under way (`#wakeAll`); `#again` asks it for one more round. */
  #waking = false;
  #again = false;
  subscribers = 0;

  constructor(log: TurnLog, turnId: string, after: number, heartbeatMs: number, onError: (error: unknown) => void) {
    this.#log = log;
    this.turnId = turnId;
    this.#head = after;
    this.#heartbeatMs = heartbeatMs;
    this.#onError = onError;
    this.#run().catch((error: unknown) => {
      if (!this.#stop.signal.aborted) onError(error);
      this.#gone = true;
      this.#changed();
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
   * The frames after `cursor`, whole batches up to about `maxBytes` (at least one), as
   * views shared with every other follower; no chunks at the head; `undefined` when the
   * window no longer holds the next one (the follower reads the log itself).
   */
  stepAfter(cursor: number, maxBytes: number): FeedStep | undefined {
    if (cursor >= this.#head) return { chunks: [], last: cursor };
    const batches = this.#batches;
    // Followers are nearly always at one of the last batches: search from the end.
    let i = batches.length - 1;
    while (i >= 0 && (batches[i] as Batch).first > cursor + 1) i--;
    if (i < 0) return undefined;
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    let last = cursor;
    for (; i < batches.length; i++) {
      const batch = batches[i] as Batch;
      const skip = last + 1 - batch.first;
      const chunk = skip === 0 ? batch.bytes : batch.bytes.subarray(batch.ends[skip - 1]);
      bytes += chunk.byteLength;
      if (chunks.length > 0 && bytes > maxBytes) break;
      chunks.push(chunk);
      last = batch.first + batch.ends.length - 1;
    }
    return { chunks, last };
  }

  /** `reader` waits at the head: it is woken at the feed's next change. */
  wait(reader: FeedReader): void {
    this.#waiting.add(reader);
    this.#onDemand?.();
  }

  /** `reader` no longer waits (it left). */
  unwait(reader: FeedReader): void {
    this.#waiting.delete(reader);
  }

  stop(): void {
    this.#stop.abort();
    this.#onDemand?.();
  }

  /**
   * Resolves once some follower waits for the feed. A feed reads only for followers at
   * its head: followers still writing what they have (or held back by their socket) need
   * nothing new, and ones behind its window read the log themselves.
   */
  #demand(): Promise<void> {
    if (this.#waiting.size > 0 || this.#stop.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onDemand = () => {
        this.#onDemand = undefined;
        resolve();
      };
    });
  }

  /** The feed moved: wakes the waiting followers, a slice at a time (see WAKE_SLICE). */
  #changed(): void {
    if (this.#waking) {
      this.#again = true;
      return;
    }
    this.#waking = true;
    void this.#wakeAll();
  }

  async #wakeAll(): Promise<void> {
    try {
      do {
        this.#again = false;
        const readers = [...this.#waiting];
        this.#waiting.clear();
        let woken = 0;
        let bytes = 0;
        for (const reader of readers) {
          // A follower woken later in the round writes what came meanwhile too; earlier ones get the next round.
          if (woken === WAKE_SLICE || bytes >= SLICE_BYTES) {
            await yieldToIo();
            woken = 0;
            bytes = 0;
          }
          woken++;
          try {
            bytes += reader.wake();
          } catch (error) {
            // One follower's broken sink must not keep the others from their frames.
            this.#onError(error);
          }
        }
      } while (this.#again);
    } finally {
      // Synchronously at the end of a round that never yielded: a change right after starts a new one.
      this.#waking = false;
    }
  }

  #add(events: readonly TurnEvent[]): void {
    const frames: string[] = [];
    const first = this.#head + 1;
    for (const event of events) {
      // The page continues the log where the feed stands; anything else is a bug of the log.
      if (event.seq !== this.#head + 1) continue;
      frames.push(sseText(event));
      this.#head = event.seq;
      if (event.type === 'turn.end') this.#endSeq = event.seq;
    }
    if (frames.length === 0) return;
    const batch = batchOf(frames, first);
    this.#batches.push(batch);
    this.#windowBytes += batch.bytes.byteLength;
    while (this.#windowBytes > WINDOW_BYTES && this.#batches.length > 1) {
      this.#windowBytes -= (this.#batches.shift() as Batch).bytes.byteLength;
    }
    this.#changed();
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
        this.#changed();
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
