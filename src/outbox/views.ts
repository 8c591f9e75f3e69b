/**
 * What the app sees of the outbox: filtered, stable views (`client.outbox`,
 * `conversation.outbox`) and the handle `conversation.send` returns.
 */
import { CancelledError, errorFromJson, TransportError, type LifelineError } from '../errors.js';
import type { ExternalStore, Outbox, OutboxEntry, Submission, Turn } from '../types.js';
import type { OutboxController } from './outbox.js';

/** Entries the app still has to care about: queued, sending or failed (not accepted). */
export function isUnaccepted(entry: OutboxEntry): boolean {
  return entry.state !== 'accepted';
}

/**
 * A filtered view of the controller's entries. The snapshot is the same array until an
 * entry it holds changes, so a conversation's view ignores other conversations' churn.
 */
export function createOutboxView(controller: OutboxController, keep: (entry: OutboxEntry) => boolean): Outbox {
  return { ...filteredStore(controller.entries, keep), retry: (id) => controller.retry(id), discard: (id) => controller.discard(id) };
}

/** A filtered external store over a list store, with the same snapshot while the kept items are the same objects. */
export function filteredStore<T>(source: ExternalStore<readonly T[]>, keep: (item: T) => boolean): ExternalStore<readonly T[]> {
  let input: readonly T[] | undefined;
  let output: readonly T[] = Object.freeze([]);
  return {
    getSnapshot() {
      const all = source.getSnapshot();
      if (all === input) return output;
      input = all;
      const next = all.filter(keep);
      if (next.length !== output.length || next.some((item, i) => item !== output[i])) output = Object.freeze(next);
      return output;
    },
    subscribe: (listener) => source.subscribe(listener),
  };
}

/**
 * The handle of one send. `accepted` resolves through {@link SubmissionTracker.accept}
 * and rejects when the entry fails or disappears unaccepted (discarded). It is marked
 * handled, so an app that ignores it never sees an unhandled rejection.
 */
export interface SubmissionTracker {
  /** Creates the handle of a freshly enqueued entry. */
  track(operationId: string): Submission;
  /** The server accepted `operationId`; `turn` is the followed turn. */
  accept(operationId: string, turn: Turn): void;
  /** Rejects every open handle (client disposed). */
  dispose(): void;
}

export function createSubmissionTracker(controller: OutboxController): SubmissionTracker {
  const open = new Map<string, { resolve: (turn: Turn) => void; reject: (error: LifelineError) => void; seen: boolean }>();
  let unsubscribe: (() => void) | undefined;

  const check = (): void => {
    const entries = new Map(controller.entries.getSnapshot().map((entry) => [entry.operationId, entry]));
    for (const [id, waiter] of open) {
      const entry = entries.get(id);
      if (entry !== undefined) {
        waiter.seen = true;
        if (entry.state !== 'failed') continue;
        waiter.reject(entry.lastError === undefined ? new TransportError('submission_rejected', 'The submission failed.') : errorFromJson(entry.lastError));
      } else if (waiter.seen) {
        waiter.reject(new CancelledError('cancelled', 'The submission was discarded before the server accepted it.'));
      } else {
        continue;
      }
      open.delete(id);
    }
    if (open.size === 0) {
      unsubscribe?.();
      unsubscribe = undefined;
    }
  };

  return {
    track(operationId) {
      const accepted = new Promise<Turn>((resolve, reject) => open.set(operationId, { resolve, reject, seen: false }));
      accepted.catch(() => undefined);
      unsubscribe ??= controller.entries.subscribe(check);
      check();
      const entry = filteredStore(controller.entries, (item) => item.operationId === operationId);
      return {
        operationId,
        accepted,
        getSnapshot: () => entry.getSnapshot()[0],
        subscribe: entry.subscribe,
      };
    },
    accept(operationId, turn) {
      open.get(operationId)?.resolve(turn);
      open.delete(operationId);
    },
    dispose() {
      for (const waiter of open.values()) waiter.reject(new CancelledError('disposed', 'The Lifeline client was disposed.'));
      open.clear();
      unsubscribe?.();
      unsubscribe = undefined;
    },
  };
}
