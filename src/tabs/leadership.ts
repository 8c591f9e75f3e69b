/**
 * One leader per name among the tabs of an origin: the outbox's sender, a shared turn's
 * streaming tab. A Web Lock where the browser has one (the browser hands it on when the
 * holder's tab closes or freezes for good); else a lease in shared storage that the
 * leader renews and the others poll. A lease is weaker: a tab asleep past its lease may
 * briefly lead beside the next holder, so the work done while leading must be safe to
 * do twice (the outbox's attempts carry one idempotency key; two streams of a turn apply
 * each seq once).
 */
import { realClock, type Clock } from '../ports/clock.js';
import { realRandom } from '../ports/random.js';
import { realTabs, type LockManagerLike } from '../ports/tabs.js';
import { realTimers, type Timers } from '../ports/timers.js';
import { sleep } from '../runtime/sleep.js';

export type { LockManagerLike } from '../ports/tabs.js';

/** A lease in storage every tab shares (the client's `Store` has these two). */
export interface LeaseStore {
  /** Takes `name` for `owner` until `now + ttlMs` when it is free, expired or `owner`'s; answers whether `owner` holds it. */
  tryLease(name: string, owner: string, ttlMs: number, now: number): Promise<boolean>;
  /** Gives `name` up if `owner` holds it. */
  releaseLease(name: string, owner: string): Promise<void>;
}

/** The storage-lease fallback. */
export interface LeaseOptions {
  store: LeaseStore;
  /** How long one take or renewal holds, ms. Followers poll every half of it, the leader renews every third. Default 10 000. */
  ttlMs?: number;
  /**
   * Receives a lease call's failure. A store that cannot answer counts as "held": leading
   * twice is safe (see above), nobody leading is not.
   */
  onError?: (error: unknown) => void;
  /**
   * The lease's expiry is stored as epoch ms (`wallNow`: other tabs read it); this tab's own
   * waits are monotonic (`now`). Default the real clock.
   */
  clock?: Clock;
  /** Mints the lease owner's id. Default nanoid. */
  newId?: () => string;
}

export interface LeadOptions {
  /**
   * Aborting it withdraws a request still waiting, and asks a leader to step down (it is
   * the signal `whileLeading` gets, or part of it).
   */
  signal: AbortSignal;
  /** Default `navigator.locks` where there is one (the tabs port); `null`: no Web Locks. */
  locks?: LockManagerLike | null | undefined;
  /** Default the real timers. */
  timers?: Timers | undefined;
  /** Where Web Locks are missing or refused (a sandboxed document). Without it such a tab leads at once, alone. */
  lease?: LeaseOptions | undefined;
}

/**
 * Waits until this tab leads `name`, then runs `whileLeading` and steps down once it
 * settles. `whileLeading` gets a signal that aborts when it must stop: `options.signal`
 * aborted, or (on a lease) a renewal was refused or did not answer before the lease ran
 * out. Resolves once stepped down, or at once when `options.signal` aborts before this
 * tab led (`whileLeading` then never runs, even if a lock is granted late). Rejects only
 * with what `whileLeading` threw.
 *
 * @example
 * const stop = new AbortController();
 * void lead('lifeline-outbox:default', { signal: stop.signal, lease: { store } }, async (signal) => {
 *   while (!signal.aborted && (await sendDue(signal)));
 * });
 */
/** How a tab came to lead: it holds the Web Lock, the storage lease, or leads alone (neither is there). */
export type LeadershipKind = 'lock' | 'lease' | 'alone';

export async function lead(name: string, options: LeadOptions, whileLeading: (signal: AbortSignal, how: LeadershipKind) => Promise<void>): Promise<void> {
  const { signal, lease } = options;
  const locks = options.locks === undefined ? realTabs.locks() : options.locks;
  if (signal.aborted) return;
  if (locks) {
    let granted = false;
    try {
      await locks.request(name, { signal }, async () => {
        granted = true;
        // A grant and an abort can cross (and a polyfill may ignore the signal): the lock is handed on at once.
        if (!signal.aborted) await whileLeading(signal, 'lock');
      });
      return;
    } catch (error) {
      if (granted) throw error;
      // Withdrawn, as asked; otherwise the lock manager refused: the lease, or alone.
      if (signal.aborted) return;
    }
  }
  if (!lease) return whileLeading(signal, 'alone');
  return leadByLease(name, signal, lease, options.timers ?? realTimers, whileLeading);
}

async function leadByLease(name: string, signal: AbortSignal, lease: LeaseOptions, timers: Timers, whileLeading: (signal: AbortSignal, how: LeadershipKind) => Promise<void>): Promise<void> {
  const { store, ttlMs = 1e4, onError, clock = realClock, newId = realRandom.id } = lease;
  const owner = newId();
  const now = (): number => clock.now();
  const take = (): Promise<boolean> =>
    store.tryLease(name, owner, ttlMs, clock.wallNow()).catch((error: unknown) => {
      onError?.(error);
      return true;
    });
  let takenAt = now();
  while (!(await take())) {
    if (!(await sleep(ttlMs / 2, signal, timers))) return;
    takenAt = now();
  }
  const lost = new AbortController();
  const leading = AbortSignal.any([signal, lost.signal]);
  void keepLease(take, ttlMs, takenAt + ttlMs, now, timers, leading).then(() => lost.abort());
  try {
    if (!signal.aborted) await whileLeading(leading, 'lease');
  } finally {
    lost.abort();
    await store.releaseLease(name, owner).catch((error: unknown) => onError?.(error));
  }
}

/**
 * Renews the lease every third of its TTL while `leading`; resolves when a renewal is
 * refused, or has not answered by the time the lease held so far runs out (a frozen
 * store), or `leading` aborted.
 */
async function keepLease(take: () => Promise<boolean>, ttlMs: number, expiresAt: number, now: () => number, timers: Timers, leading: AbortSignal): Promise<void> {
  while (await sleep(ttlMs / 3, leading, timers)) {
    const askedAt = now();
    const expiry = new AbortController();
    const renewed = await Promise.race([take(), sleep(expiresAt - askedAt, AbortSignal.any([leading, expiry.signal]), timers).then(() => false)]);
    expiry.abort();
    if (!renewed) return;
    expiresAt = askedAt + ttlMs;
  }
}
