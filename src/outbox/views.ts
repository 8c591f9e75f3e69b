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
  /** Creates a handle of an enqueued entry (several handles may share one: the same key sent twice). */
  track(operationId: string): Submission;
  /** The server accepted `operationId`; `turn` is the followed turn. */
  accept(operationId: string, turn: Turn): void;
  /** Rejects every open handle (client disposed). */
  dispose(): void;
}

/**
 * `follow` answers the turn of an entry found accepted already when its handle is made (the
 * same key sent again after the first send was accepted): no acceptance is announced again.
 */
export function createSubmissionTracker({ entries }: OutboxController, follow: (turnId: string) => Turn): SubmissionTracker {
  /** Settles the open handles of an entry: a turn resolves them, an error rejects them. */
  const open = new Map<string, Set<(outcome: Turn | LifelineError) => void>>();
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
          open.get(operationId)?.delete(settle);
          if (!open.get(operationId)?.size) open.delete(operationId);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        };
        const settles = open.get(operationId) ?? new Set();
        open.set(operationId, settles.add(settle));
        const found = getSnapshot();
        if (found?.state === 'accepted' && found.turnId) settle(follow(found.turnId));
        else check();
      });
      accepted.catch(() => undefined);
      return { operationId, accepted, getSnapshot, subscribe: entries.subscribe };
    },
    accept: (operationId, turn) => [...(open.get(operationId) ?? [])].forEach((settle) => settle(turn)),
    dispose() {
      for (const settles of [...open.values()]) for (const settle of [...settles]) settle(new CancelledError('disposed', 'The client was disposed.'));
    },
  };
}
