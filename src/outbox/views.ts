/**
 * What the app sees of the outbox: filtered, stable views (`client.outbox`,
 * `conversation.outbox`) and the handle `conversation.send` returns.
 */
import { CancelledError, errorFromJson, type LifelineError } from '../errors.js';
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
export function createOutboxView({ entries, retry, discard }: OutboxController, keep: (entry: OutboxEntry) => boolean): Outbox {
  return { ...filteredStore(entries, keep), retry, discard };
}

/** A filtered external store over a list store, with the same snapshot while the kept items are the same objects. */
export function filteredStore<T>(source: ExternalStore<readonly T[]>, keep: (item: T) => boolean): ExternalStore<readonly T[]> {
  let output: readonly T[] = Object.freeze([]);
  return {
    getSnapshot() {
      const next = source.getSnapshot().filter(keep);
      if (next.length !== output.length || next.some((item, i) => item !== output[i])) output = Object.freeze(next);
      return output;
    },
    subscribe: source.subscribe,
  };
}

/**
 * The handle of one send. `accepted` resolves through {@link SubmissionTracker.accept}
 * and rejects when the entry fails or disappears unaccepted (discarded, cleared). It is
 * marked handled, so an app that ignores it never sees an unhandled rejection.
 */
export interface SubmissionTracker {
  /** Creates the handle of a freshly enqueued entry. */
  track(operationId: string): Submission;
  /** The server accepted `operationId`; `turn` is the followed turn. */
  accept(operationId: string, turn: Turn): void;
  /** Rejects every open handle (client disposed). */
  dispose(): void;
}

export function createSubmissionTracker({ entries }: OutboxController): SubmissionTracker {
  /** Settles an open handle: a turn resolves it, an error rejects it. */
  const open = new Map<string, (outcome: Turn | LifelineError) => void>();
  return {
    track(operationId) {
      // Entries are replaced on change, so this is the same object while the entry is unchanged.
      const getSnapshot = (): OutboxEntry | undefined => entries.getSnapshot().find((entry) => entry.operationId === operationId);
      const accepted = new Promise<Turn>((resolve, reject) => {
        const check = (): void => {
          const entry = getSnapshot();
          // Gone unaccepted (the entry is listed from `enqueue` on): discarded or cleared.
          if (!entry || entry.state === 'failed') settle(entry?.lastError ? errorFromJson(entry.lastError) : new CancelledError());
        };
        const unsubscribe = entries.subscribe(check);
        const settle = (outcome: Turn | LifelineError): void => {
          unsubscribe();
          open.delete(operationId);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        };
        open.set(operationId, settle);
        check();
      });
      accepted.catch(() => undefined);
      return { operationId, accepted, getSnapshot, subscribe: entries.subscribe };
    },
    accept: (operationId, turn) => open.get(operationId)?.(turn),
    dispose() {
      for (const settle of open.values()) settle(new CancelledError('disposed', 'The client was disposed.'));
    },
  };
}
