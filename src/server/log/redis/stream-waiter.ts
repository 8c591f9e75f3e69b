import type { Redis } from 'ioredis';

/**
 * Parks many "wake me when this stream has an entry after seq N" requests on ONE
 * blocking connection per process. A blocking `XREAD` occupies its connection, so one
 * connection per waiting follower would cost a Redis connection per open SSE stream;
 * instead a single loop issues `XREAD BLOCK … STREAMS <every watched key>` and hands
 * out what comes back.
 *
 * When a follower starts watching a key the in-flight `XREAD` does not cover, the loop
 * is woken by an `XADD` to a small control stream that every `XREAD` also watches. That
 * is race-free where `CLIENT UNBLOCK` is not: if the control entry lands before the
 * `XREAD` reaches the server, the `XREAD` returns at once because it asks for entries
 * after the last control id it saw. A follower that stops watching (abort, timeout)
 * costs no Redis command at all; its key simply drops out of the next `XREAD`.
 *
 * A key whose last follower was just woken stays in the next reads for a moment (from
 * the last seq the waking read brought): the follower takes those entries (or reads the
 * new events) and waits again from there,
 * which the read in flight already covers, so following a live turn costs no control
 * write per event.
 */
/** A stream entry as XREAD and XRANGE answer it: `[id, [field, value, …]]`. */
export type StreamEntry = [string, string[]];

export interface StreamWaiter {
  /**
   * Resolves `true` once the stream `key` holds an entry with seq > `after`
   * (immediately when it already does), `false` when `timeoutMs` passes, `signal`
   * aborts, the connection fails or the waiter closes. Never rejects. `onEntries`, when
   * given, receives the entries after `after` that the waking read brought (a few, from
   * `after + 1` on), so the caller need not read them again.
   */
  wait(key: string, after: number, signal: AbortSignal, timeoutMs: number, onEntries?: (entries: StreamEntry[]) => void): Promise<boolean>;
  /** Settles every pending wait with `false` and drops the blocking connection. */
  close(): Promise<void>;
}

export interface StreamWaiterOptions {
  /** Used for control writes and duplicated once for the blocking connection. */
  client: Redis;
  /** The control stream's key; unique per waiter. */
  wakeKey: string;
  /** Longest single `XREAD BLOCK`, ms; the loop re-issues it while anyone waits. */
  blockMs: number;
  /** Failures of the blocking connection; the waits it served settle `false`. */
  onError: (error: unknown) => void;
}

interface Waiter {
  after: number;
  /** `seq`: the last entry the waking read brought, if one did; `entries`: those after `after`. */
  settle(woken: boolean, seq?: number, entries?: StreamEntry[]): void;
}

/** Seq of a stream entry id `<seq>-0`. */
function seqOf(id: string): number {
  return Number.parseInt(id, 10);
}

/** The control stream only needs to outlive a crashed process briefly. */
const WAKE_TTL_MS = 60 * 60 * 1000;
/** How long a key stays watched after its last follower left, ms: enough to read a page and come back. */
const LINGER_MS = 2000;
/**
 * Entries one XREAD brings per stream: what a live turn logged since its reader's last
 * wake, handed to it so it skips its own read (a few small events as a rule; a bigger
 * backlog is read by the caller in pages).
 */
const ENTRIES_PER_READ = 16;

type XReadReply = [string, StreamEntry[]][] | null;

export function createStreamWaiter(options: StreamWaiterOptions): StreamWaiter {
  return new BlockingReader(options);
}

function minAfter(set: Set<Waiter>): number {
  let min = Number.POSITIVE_INFINITY;
  for (const waiter of set) min = Math.min(min, waiter.after);
  return min;
}

class BlockingReader implements StreamWaiter {
  readonly #client: Redis;
  readonly #wakeKey: string;
  readonly #blockMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #byKey = new Map<string, Set<Waiter>>();
  /** Keys nobody waits on right now, still read from `seq` until `until` (ms). */
  readonly #lingering = new Map<string, { seq: number; until: number }>();
  /** ioredis prefixes key names with its own `keyPrefix` option, also in XREAD replies. */
  readonly #clientPrefix: string;
  #connection: Redis | undefined;
  #running = false;
  #closed = false;
  /** Last control entry seen; a wake is any entry after it. */
  #wakeId = '0-0';
  /** The seq each key was asked from in the `XREAD` now in flight, or undefined between reads. */
  #inFlight: Map<string, number> | undefined;
  #wakeSent = false;

  constructor(options: StreamWaiterOptions) {
    this.#client = options.client;
    this.#wakeKey = options.wakeKey;
    this.#blockMs = options.blockMs;
    this.#onError = options.onError;
    this.#clientPrefix = (options.client.options as { keyPrefix?: string }).keyPrefix ?? '';
  }

  wait(key: string, after: number, signal: AbortSignal, timeoutMs: number, onEntries?: (entries: StreamEntry[]) => void): Promise<boolean> {
    if (this.#closed || signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        after,
        settle: (woken, seq = 0, entries) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          this.#remove(key, waiter, seq);
          if (entries !== undefined && entries.length > 0) onEntries?.(entries);
          resolve(woken);
        },
      };
      const onAbort = (): void => waiter.settle(false);
      const timer = setTimeout(onAbort, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      let set = this.#byKey.get(key);
      if (!set) this.#byKey.set(key, (set = new Set()));
      set.add(waiter);
      if (!this.#running) {
        this.#loop().catch(this.#onError);
        return;
      }
      const asked = this.#inFlight?.get(key);
      // A read in flight that does not cover this key (or asks from a later seq) must be redone.
      if (this.#inFlight !== undefined && (asked === undefined || asked > after)) this.#wake();
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#settleAll(false);
    // Dropping the socket ends the blocked XREAD; the loop sees `closed` and stops.
    this.#connection?.disconnect();
    // Not awaited: with Redis away it would wait in the client's queue; the key expires anyway.
    this.#client.del(this.#wakeKey).catch(this.#onError);
  }

  #remove(key: string, waiter: Waiter, seenSeq: number): void {
    const set = this.#byKey.get(key);
    set?.delete(waiter);
    if (set?.size !== 0) return;
    this.#byKey.delete(key);
    this.#lingering.set(key, { seq: Math.max(seenSeq, waiter.after), until: Date.now() + LINGER_MS });
  }

  #settleAll(woken: boolean): void {
    for (const set of [...this.#byKey.values()]) for (const waiter of [...set]) waiter.settle(woken);
  }

  #wake(): void {
    if (this.#wakeSent) return;
    this.#wakeSent = true;
    this.#client
      .multi()
      .xadd(this.#wakeKey, 'MAXLEN', '~', '64', '*', 'w', '1')
      .pexpire(this.#wakeKey, WAKE_TTL_MS)
      .exec()
      .catch((error: unknown) => {
        // The blocked read still returns within blockMs; the follower is late, not lost.
        this.#wakeSent = false;
        this.#onError(error);
      });
  }

  /** The keys of the next XREAD and the seq each is read after: every waited key, and the lingering ones. */
  #nextRead(): Map<string, number> {
    const read = new Map<string, number>();
    const now = Date.now();
    for (const [key, { seq, until }] of this.#lingering) {
      if (until <= now || this.#byKey.has(key)) this.#lingering.delete(key);
      else read.set(key, seq);
    }
    for (const [key, set] of this.#byKey) read.set(key, minAfter(set));
    return read;
  }

  #deliver(reply: XReadReply): void {
    for (const [rawKey, entries] of reply ?? []) {
      const key = rawKey.startsWith(this.#clientPrefix) ? rawKey.slice(this.#clientPrefix.length) : rawKey;
      const first = entries[0];
      if (first === undefined) continue;
      if (key === this.#wakeKey) {
        this.#wakeId = (entries[entries.length - 1] as [string, string[]])[0];
        continue;
      }
      const last = seqOf((entries[entries.length - 1] as StreamEntry)[0]);
      // New entries nobody is back for yet: the key's follower will ask from an older seq.
      this.#lingering.delete(key);
      for (const waiter of [...(this.#byKey.get(key) ?? [])]) {
        if (waiter.after < last) waiter.settle(true, last, entries.filter(([id]) => seqOf(id) > waiter.after));
      }
    }
  }

  async #loop(): Promise<void> {
    this.#running = true;
    try {
      while (!this.#closed && this.#byKey.size > 0) {
        // No command timeout: a blocked XREAD is silent for up to blockMs by design.
        this.#connection ??= this.#client.duplicate({ commandTimeout: undefined }).on('error', this.#onError);
        const read = (this.#inFlight = this.#nextRead());
        const keys = [...read.keys()];
        this.#wakeSent = false;
        let reply: XReadReply;
        try {
          const from = keys.map((key) => `${read.get(key) ?? 0}-0`);
          reply = (await this.#connection.xread('COUNT', ENTRIES_PER_READ, 'BLOCK', this.#blockMs, 'STREAMS', this.#wakeKey, ...keys, this.#wakeId, ...from)) as XReadReply;
        } catch (error) {
          this.#inFlight = undefined;
          if (this.#closed) break;
          this.#onError(error);
          // Each follower re-checks the turn itself and sees the failure there.
          this.#settleAll(false);
          continue;
        }
        this.#inFlight = undefined;
        this.#deliver(reply);
      }
    } finally {
      this.#running = false;
    }
  }
}
