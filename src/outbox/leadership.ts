/**
 * One leader per Web Locks name, with a fallback where the lock manager refuses. The
 * outbox elects its sender itself (src/outbox/outbox.ts); this module remains only for
 * the cross-tab stream sharing (src/transport/tab-share.ts), which is being removed:
 * delete this file with it.
 */
import type { OutboxLocks } from './outbox.js';

export type { OutboxLocks };

/** Runs work while this tab is the only leader. */
export interface Leadership {
  /**
   * Waits to lead, runs `work`, then steps down. `lost` aborts when the lead is taken
   * away; `cancel` stops waiting. Resolves when work ends or waiting was cancelled;
   * rejects only if `work` does.
   */
  hold(work: (lost: AbortSignal) => Promise<void>, cancel: AbortSignal): Promise<void>;
}

/** Web Locks: the lock is held exactly as long as `work` runs; where the lock manager refuses, `fallback` leads. */
export function createLockLeadership(locks: OutboxLocks, name: string, fallback: Leadership): Leadership {
  return {
    async hold(work, cancel) {
      let started = false;
      try {
        await locks.request(name, { signal: cancel }, () => {
          started = true;
          return work(new AbortController().signal);
        });
      } catch (error) {
        if (started) throw error;
        // Else cancelled while waiting (nothing to do), or refused.
        if (!cancel.aborted) await fallback.hold(work, cancel);
      }
    },
  };
}
