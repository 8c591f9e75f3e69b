/**
 * Who sends: exactly one tab per namespace drains the outbox. With Web Locks the browser
 * guarantees it and hands the lock to a waiting tab when the holder closes or crashes.
 * Without them, a lease row in storage with a time-to-live stands in; a tab that sleeps
 * past its lease may briefly overlap with the next holder, which is safe because every
 * attempt carries the entry's Idempotency-Key (the server creates one turn per key).
 */
import type { Store } from '../storage/store.js';

/** The part of `navigator.locks` the outbox uses. */
export interface OutboxLocks {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown>;
}

/** Runs work while this tab is the only sender. */
export interface Leadership {
  /**
   * Waits to become the sender, runs `work`, then steps down. `lost` aborts when the
   * lead is taken away (an expired lease); `cancel` (dispose) stops waiting.
   * Resolves when work ends or waiting was cancelled; rejects only if `work` does.
   */
  hold(work: (lost: AbortSignal) => Promise<void>, cancel: AbortSignal): Promise<void>;
}

/**
 * Web Locks: the lock is held exactly as long as `work` runs. Where the lock manager
 * refuses outright (a sandboxed or detached document throws `SecurityError`/
 * `InvalidStateError`), `fallback` takes over for good.
 */
export function createLockLeadership(locks: OutboxLocks, name: string, fallback: Leadership): Leadership {
  const never = new AbortController().signal;
  let broken = false;
  return {
    async hold(work, cancel) {
      if (cancel.aborted) return;
      if (broken) return fallback.hold(work, cancel);
      let started = false;
      try {
        await locks.request(name, { signal: cancel }, () => {
          started = true;
          return work(never);
        });
      } catch (error) {
        // Cancelling a queued request rejects with the signal's reason.
        if (cancel.aborted && !started) return;
        if (started) throw error;
        broken = true;
        return fallback.hold(work, cancel);
      }
    },
  };
}

export interface LeaseLeadershipOptions {
  storage: Pick<Store, 'tryLease' | 'releaseLease'>;
  name: string;
  owner: string;
  ttlMs: number;
  now: () => number;
  /** Storage trouble while taking, renewing or releasing the lease. */
  onError: (error: unknown) => void;
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Lease fallback: take the lease (free, expired or ours), renew it every third of its
 * time-to-live while working, poll every half of it while another tab holds it. A store
 * that cannot answer counts as "lease held": sending twice is safe, never sending is not.
 */
export function createLeaseLeadership(options: LeaseLeadershipOptions): Leadership {
  const { storage, name, owner, ttlMs, now, onError } = options;
  const take = async (): Promise<boolean> => {
    try {
      return await storage.tryLease(name, owner, ttlMs, now());
    } catch (error) {
      onError(error);
      return true;
    }
  };
  return {
    async hold(work, cancel) {
      while (!cancel.aborted) {
        if (await take()) break;
        await delay(ttlMs / 2, cancel);
      }
      if (cancel.aborted) return;
      const lost = new AbortController();
      let renewal: Promise<void> = Promise.resolve();
      const renew = setInterval(() => {
        renewal = take().then((held) => {
          if (!held) lost.abort();
        });
      }, ttlMs / 3);
      try {
        await work(lost.signal);
      } finally {
        clearInterval(renew);
        // A renewal still on its way would take the lease back after the release.
        await renewal;
        if (!lost.signal.aborted) {
          await storage.releaseLease(name, owner).catch(onError);
        }
      }
    },
  };
}
