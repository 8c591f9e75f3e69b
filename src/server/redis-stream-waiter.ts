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
 * the seq that woke it): the follower reads the new events and waits again from there,
 * which the read in flight already covers, so following a live turn costs no control
 * write per event.
 */
export interface StreamWaiter {
  /**
   * Resolves `true` once the stream `key` holds an entry with seq > `after`
   * (immediately when it already does), `false` when `timeoutMs` passes, `signal`
   * aborts, the connection fails or the waiter closes. Never rejects.
   */
  wait(key: string, after: number, signal: AbortSignal, timeoutMs: number): Promise<boolean>;
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
  /** `seq`: the entry that woke it, if one did. */
  settle(woken: boolean, seq?: number): void;
}

/** Seq of a stream entry id `<seq>-0`. */
function seqOf(id: string): number {
  return Number.parseInt(id, 10);
}

/** The control stream only needs to outlive a crashed process briefly. */
const WAKE_TTL_MS = 60 * 60 * 1000;
/** How long a key stays watched after its last follower left, ms: enough to read a page and come back. */
const LINGER_MS = 2000;

export function createStreamWaiter(options: StreamWaiterOptions): StreamWaiter {
  const { client, wakeKey, blockMs, onError } = options;
  const byKey = new Map<string, Set<Waiter>>();
  /** Keys nobody waits on right now, still read from `seq` until `until` (ms). */
  const lingering = new Map<string, { seq: number; until: number }>();
  let connection: Redis | undefined;
  let running = false;
  let closed = false;
  /** Last control entry seen; a wake is any entry after it. */
  let wakeId = '0-0';
  /** The seq each key was asked from in the `XREAD` now in flight, or undefined between reads. */
  let inFlight: Map<string, number> | undefined;
  let wakeSent = false;
  /** ioredis prefixes key names with its own `keyPrefix` option, also in XREAD replies. */
  const clientPrefix = (client.options as { keyPrefix?: string }).keyPrefix ?? '';

  function remove(key: string, waiter: Waiter, seenSeq: number): void {
    const set = byKey.get(key);
    set?.delete(waiter);
    if (set?.size !== 0) return;
    byKey.delete(key);
    lingering.set(key, { seq: Math.max(seenSeq, waiter.after), until: Date.now() + LINGER_MS });
  }

  function settleAll(woken: boolean): void {
    for (const set of [...byKey.values()]) for (const waiter of [...set]) waiter.settle(woken);
  }

  function wake(): void {
    if (wakeSent) return;
    wakeSent = true;
    client
      .multi()
      .xadd(wakeKey, 'MAXLEN', '~', '64', '*', 'w', '1')
      .pexpire(wakeKey, WAKE_TTL_MS)
      .exec()
      .catch((error: unknown) => {
        // The blocked read still returns within blockMs; the follower is late, not lost.
        wakeSent = false;
        onError(error);
      });
  }

  function minAfter(set: Set<Waiter>): number {
    let min = Number.POSITIVE_INFINITY;
    for (const waiter of set) min = Math.min(min, waiter.after);
    return min;
  }

  /** The keys of the next XREAD and the seq each is read after: every waited key, and the lingering ones. */
  function nextRead(): Map<string, number> {
    const read = new Map<string, number>();
    const now = Date.now();
    for (const [key, { seq, until }] of lingering) {
      if (until <= now || byKey.has(key)) lingering.delete(key);
      else read.set(key, seq);
    }
    for (const [key, set] of byKey) read.set(key, minAfter(set));
    return read;
  }

  function deliver(reply: [string, [string, string[]][]][] | null): void {
    for (const [rawKey, entries] of reply ?? []) {
      const key = rawKey.startsWith(clientPrefix) ? rawKey.slice(clientPrefix.length) : rawKey;
      const first = entries[0];
      if (first === undefined) continue;
      if (key === wakeKey) {
        wakeId = (entries[entries.length - 1] as [string, string[]])[0];
        continue;
      }
      const seq = seqOf(first[0]);
      // New entries nobody is back for yet: the key's follower will ask from an older seq.
      lingering.delete(key);
      for (const waiter of [...(byKey.get(key) ?? [])]) if (waiter.after < seq) waiter.settle(true, seq);
    }
  }

  async function loop(): Promise<void> {
    running = true;
    try {
      while (!closed && byKey.size > 0) {
        if (connection === undefined) {
          // No command timeout: a blocked XREAD is silent for up to blockMs by design.
          connection = client.duplicate({ commandTimeout: undefined });
          connection.on('error', onError);
        }
        inFlight = nextRead();
        const keys = [...inFlight.keys()];
        wakeSent = false;
        let reply: [string, [string, string[]][]][] | null;
        try {
          reply = (await connection.xread(
            'COUNT',
            1,
            'BLOCK',
            blockMs,
            'STREAMS',
            wakeKey,
            ...keys,
            wakeId,
            ...keys.map((key) => `${inFlight?.get(key) ?? 0}-0`),
          )) as [string, [string, string[]][]][] | null;
        } catch (error) {
          inFlight = undefined;
          if (closed) break;
          onError(error);
          // Each follower re-checks the turn itself and sees the failure there.
          settleAll(false);
          continue;
        }
        inFlight = undefined;
        deliver(reply);
      }
    } finally {
      running = false;
    }
  }

  return {
    wait(key, after, signal, timeoutMs) {
      if (closed || signal.aborted) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const waiter: Waiter = {
          after,
          settle(woken, seq = 0) {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            remove(key, waiter, seq);
            resolve(woken);
          },
        };
        const onAbort = (): void => waiter.settle(false);
        const timer = setTimeout(onAbort, timeoutMs);
        signal.addEventListener('abort', onAbort, { once: true });
        let set = byKey.get(key);
        if (!set) byKey.set(key, (set = new Set()));
        set.add(waiter);
        if (!running) {
          loop().catch(onError);
          return;
        }
        const asked = inFlight?.get(key);
        // A read in flight that does not cover this key (or asks from a later seq) must be redone.
        if (inFlight !== undefined && (asked === undefined || asked > after)) wake();
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      settleAll(false);
      // Dropping the socket ends the blocked XREAD; the loop sees `closed` and stops.
      connection?.disconnect();
      await client.del(wakeKey).catch(onError);
    },
  };
}
