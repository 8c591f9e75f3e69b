/**
 * Virtual time for one simulated run: a monotonic clock, a wall clock that can be set
 * forwards or back independently of it, and one queue of timers and tasks ordered by due
 * time, then by when they were queued. Nothing here waits for real time: `settle()` drains
 * the microtask queue (one real `setImmediate` turn, taken before the world patches
 * anything) and runs whatever is due now, until nothing is; `advance(ms)` moves the clock
 * timer by timer. A callback that throws is recorded as an uncaught error, as a browser
 * would report it.
 */

/** `setTimeout` keeps delays as int32: past 2^31 − 1 ms it fires after 1 ms (Node; browsers fire at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The wall clock's value at virtual time 0 (2026-01-01T00:00:00Z). */
export const EPOCH_MS = Date.UTC(2026, 0, 1);

/** A handle like Node's `Timeout` (so `unref()` works) that also converts to its id. */
export interface TimerHandle {
  readonly id: number;
  unref(): TimerHandle;
  ref(): TimerHandle;
  hasRef(): boolean;
  [Symbol.toPrimitive](): number;
}

interface Entry {
  id: number;
  at: number;
  order: number;
  run: () => void;
  /** Who queued it: a tab (so a closed tab's timers die with it) or the world. */
  owner: string;
  /** For setInterval: re-armed after each run. */
  every?: number;
  /** A platform timer the client armed (counted for the busy-loop bound), not a world task. */
  timer: boolean;
}

export interface Scheduler {
  /** Virtual monotonic ms since the run began. */
  now(): number;
  /** Virtual wall clock, epoch ms (jumps with `jumpWall`). */
  wall(): number;
  /** Sets the wall clock forwards (positive) or back; the monotonic clock does not move. */
  jumpWall(deltaMs: number): void;
  /** A platform `setTimeout`: delays clamped as the platform does (negative/NaN → 0, overflow → 1 ms). */
  setTimer(run: () => void, ms: unknown, owner: string, every?: boolean): TimerHandle;
  clearTimer(handle: unknown): void;
  /** A world task (message delivery, a lock grant, a network chunk) after `ms`. */
  task(run: () => void, ms: number, owner?: string): number;
  cancel(id: number): void;
  /** Drops every pending timer and task of `owner` (a tab closed or crashed). */
  killOwner(owner: string): void;
  /** Runs everything due now, draining microtasks between callbacks, until nothing is. */
  settle(): Promise<void>;
  /** Moves time forward by `ms`, running each timer and task at its due time. */
  advance(ms: number): Promise<void>;
  /** Pending entries (timers and tasks), optionally of one owner. */
  pending(owner?: string): number;
  /** Platform timers pending (not world tasks). */
  pendingTimers(): number;
  /** When the next entry is due, if any. */
  nextAt(): number | undefined;
  /** Most platform timers fired within any one virtual second so far. */
  readonly peakTimersPerSecond: number;
  /** Errors thrown by callbacks (uncaught, as a browser would report them). */
  readonly uncaught: unknown[];
}

export interface SchedulerOptions {
  /** Callbacks run at one instant before the run counts as a busy loop. */
  maxPerInstant?: number;
  /** The real `setImmediate`, captured before anything is patched. */
  setImmediate: (run: () => void) => void;
  /** Runs a callback as its owner (the world sets the tab's async context, so what it queues is the tab's too). */
  runAs?: (owner: string, run: () => void) => void;
}

/** Thrown out of `settle`/`advance` when callbacks keep running at one instant. */
export class BusyLoopError extends Error {}

export function createScheduler({ maxPerInstant = 20_000, setImmediate, runAs = (_, run) => run() }: SchedulerOptions): Scheduler {
  let now = 0;
  let wallOffset = 0;
  let ids = 0;
  let orders = 0;
  /** Kept sorted by (at, order): inserts are rare next to reads at this size. */
  const queue: Entry[] = [];
  const byId = new Map<number, Entry>();
  const uncaught: unknown[] = [];
  let second = 0;
  let inSecond = 0;
  let peak = 0;

  const insert = (entry: Entry): void => {
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const other = queue[mid]!;
      if (other.at < entry.at || (other.at === entry.at && other.order < entry.order)) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, entry);
    byId.set(entry.id, entry);
  };
  const remove = (id: number): void => {
    const entry = byId.get(id);
    if (!entry) return;
    byId.delete(id);
    const index = queue.indexOf(entry);
    if (index >= 0) queue.splice(index, 1);
  };
  const drain = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const idOf = (handle: unknown): number | undefined =>
    typeof handle === 'number' ? handle : typeof handle === 'object' && handle !== null && 'id' in handle ? Number((handle as TimerHandle).id) : undefined;

  const fire = (entry: Entry): void => {
    byId.delete(entry.id);
    queue.shift();
    if (entry.timer) {
      const s = Math.floor(now / 1000);
      if (s !== second) [second, inSecond] = [s, 0];
      peak = Math.max(peak, ++inSecond);
    }
    if (entry.every !== undefined) insert({ ...entry, at: now + entry.every, order: orders++ });
    runAs(entry.owner, () => {
      try {
        entry.run();
      } catch (error) {
        uncaught.push(error);
      }
    });
  };

  const settle = async (): Promise<void> => {
    let count = 0;
    for (;;) {
      await drain();
      const head = queue[0];
      if (!head || head.at > now) return;
      if (++count > maxPerInstant) throw new BusyLoopError(`more than ${maxPerInstant} callbacks at virtual ${now} ms`);
      fire(head);
    }
  };

  return {
    now: () => now,
    wall: () => EPOCH_MS + now + wallOffset,
    jumpWall: (delta) => void (wallOffset += delta),
    setTimer(run, ms, owner, every) {
      let delay = Number(ms);
      if (!(delay > 0)) delay = 0;
      if (delay > MAX_TIMER_MS) delay = 1;
      const id = ++ids;
      insert({ id, at: now + delay, order: orders++, run, owner, timer: true, ...(every && { every: Math.max(delay, 1) }) });
      const handle: TimerHandle = {
        id,
        unref: () => handle,
        ref: () => handle,
        hasRef: () => true,
        [Symbol.toPrimitive]: () => id,
      };
      return handle;
    },
    clearTimer(handle) {
      const id = idOf(handle);
      if (id !== undefined && byId.get(id)?.timer) remove(id);
    },
    task(run, ms, owner = 'world') {
      const id = ++ids;
      insert({ id, at: now + Math.max(0, ms), order: orders++, run, owner, timer: false });
      return id;
    },
    cancel: remove,
    killOwner(owner) {
      for (const entry of queue.filter((e) => e.owner === owner)) remove(entry.id);
    },
    settle,
    async advance(ms) {
      const target = now + ms;
      await settle();
      for (let head; (head = queue[0]) && head.at <= target; ) {
        now = Math.max(now, head.at);
        await settle();
      }
      now = target;
      await settle();
    },
    pending: (owner) => (owner === undefined ? queue.length : queue.filter((e) => e.owner === owner).length),
    pendingTimers: () => queue.filter((e) => e.timer).length,
    nextAt: () => queue[0]?.at,
    get peakTimersPerSecond() {
      return peak;
    },
    uncaught,
  };
}
