/**
 * The outbox's times on this page's monotonic clock (docs/faults.md row 42). Records store wall
 * times (`createdAt`, `nextAttemptAt`): information other tabs and later pages read. This
 * page re-bases each onto its monotonic clock when it first sees it (a new entry, a record
 * read back, a new attempt's schedule), so a wall clock set back or forward afterwards
 * neither parks an entry nor hurries it. A re-based time is capped by what could have been
 * asked for (a backoff or `Retry-After`, nothing for an entry never tried or cut off mid-attempt; the age limit): a record written before a wall
 * clock jump cannot park an entry for the jump either.
 */
import type { Clock } from '../ports/clock.js';
import type { OutboxRecord } from '../storage/store.js';

export interface Schedule {
  /** When the entry is next due, monotonic ms. */
  dueAt(entry: OutboxRecord): number;
  /** When the entry passes its age limit, monotonic ms. */
  deadline(entry: OutboxRecord): number;
  /** Forgets the entries not in `list`. */
  keep(list: readonly OutboxRecord[]): void;
}

export interface ScheduleOptions {
  clock: Clock;
  maxAgeMs: number;
  /** The longest wait one attempt may schedule (the larger of the backoff cap and the `Retry-After` cap), ms. */
  maxDelayMs: number;
}

/** One re-based time, kept while the stored time it came from is the same. */
interface Based {
  wall: number;
  at: number;
}

export function createSchedule({ clock, maxAgeMs, maxDelayMs }: ScheduleOptions): Schedule {
  const due = new Map<string, Based>();
  const ages = new Map<string, Based>();
  /** `wall` on the monotonic clock, capped at `cap` ms from now. */
  const rebase = (memo: Map<string, Based>, id: string, wall: number, cap: number): number => {
    const known = memo.get(id);
    if (known?.wall === wall) return known.at;
    const now = clock.now();
    const at = now + Math.min(wall - clock.wallNow(), cap);
    memo.set(id, { wall, at });
    return at;
  };
  return {
    // An entry never tried, or `sending` (its attempt began when due, and the sender here is
    // not running it): nothing asked it to wait, so no wait survives a wall-clock jump.
    dueAt: (entry) => rebase(due, entry.operationId, entry.nextAttemptAt, entry.attempts === 0 || entry.state === 'sending' ? 0 : maxDelayMs),
    deadline: (entry) => rebase(ages, entry.operationId, entry.createdAt + maxAgeMs, maxAgeMs),
    keep(list) {
      const ids = new Set(list.map((entry) => entry.operationId));
      for (const memo of [due, ages]) for (const id of memo.keys()) if (!ids.has(id)) memo.delete(id);
    },
  };
}
