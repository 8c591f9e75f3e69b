/**
 * The outbox's entries as this tab knows them, kept in step with storage and the other
 * tabs.
 *
 * - The list is one frozen array sorted by `order`, replaced (never mutated) on every
 *   change; every change of an entry's state goes through `save` (memory at once, then
 *   storage).
 * - This tab's storage operations run one after another (`queue`): an entry's `sending`
 *   write (awaited before each POST) lands after its first write, and a re-read sees every
 *   earlier write.
 * - Other tabs hear of each write through `notify`: `null` means "re-read storage", an
 *   operation id means "deleted".
 * - Every tab hands the accepted entries it sees to `onAccepted`, once each, and deletes
 *   them `acceptedRetentionMs` after that settled. If `onAccepted` rejects the entry is
 *   kept, so the next page's `start()` offers it again.
 */
import type { LifelineError, StorageError } from '../errors.js';
import type { SubmitAnswer } from '../protocol/schemas.js';
import type { Timers } from '../ports/timers.js';
import type { OutboxRecord } from '../storage/store.js';
import { progress } from './entry-state.js';
import type { Journal } from './journal.js';
import type { OutboxDeps, OutboxStorage } from './types.js';

export interface LedgerDeps extends Pick<OutboxDeps, 'onAccepted'> {
  storage: OutboxStorage;
  journal: Journal;
  /** Requests this tab has in flight, by operation id: aborted when their entry is forgotten. */
  busy: ReadonlyMap<string, AbortController>;
  acceptedRetentionMs: number;
  timers: Timers;
  /** Tells the other tabs of a landed write: `null` "re-read storage", an operation id "deleted". */
  notify: (notice: string | null) => void;
  /** Reports a storage failure and answers it as a {@link StorageError}. */
  trouble: (error: unknown) => StorageError;
  /** Called after every change of the list. */
  changed: () => void;
}

export interface Ledger {
  /** Every entry by order; the same array while nothing changed. */
  list(): readonly OutboxRecord[];
  find(operationId: string): OutboxRecord | undefined;
  /** The one state-write path: memory at once, then storage. Resolves with the storage error, if any. */
  save(entry: OutboxRecord): Promise<StorageError | void>;
  /** Forgets an entry here for good (discarded, deleted elsewhere, cleared), aborting its request. */
  forget(operationId: string): void;
  /** Forgets an entry and deletes it from storage, the journal and the other tabs. */
  drop(operationId: string): Promise<void>;
  /**
   * Re-reads storage after this tab's writes so far and takes what changed there; resolves
   * with the records storage skipped as corrupt.
   */
  reload(): Promise<readonly LifelineError[]>;
  /** Resolves once the writes on their way have landed. */
  settled(): Promise<unknown>;
  /** Stops changing: nothing is shown, notified or written from memory again. */
  close(): void;
}

/**
 * Hands each acceptance to `onAccepted` once; `remove`s the entry `acceptedRetentionMs`
 * after that settled (kept in storage when it rejects: the next page's start() offers it again).
 */
function acceptanceHandOff({ onAccepted, acceptedRetentionMs, timers }: LedgerDeps, remove: (operationId: string) => void): (entry: OutboxRecord) => void {
  const offered = new Set<string>();
  return (entry) => {
    const { operationId, conversationId, turnId, messageId } = entry;
    if (!turnId || !messageId || offered.has(operationId)) return;
    offered.add(operationId);
    const answer: SubmitAnswer = { turnId, messageId, conversationId, status: 'pending' };
    void Promise.resolve()
      .then(() => onAccepted(entry, answer))
      .then(() => timers.set(() => remove(operationId), acceptedRetentionMs), () => undefined);
  };
}

export function createLedger(deps: LedgerDeps): Ledger {
  const { storage, busy } = deps;
  let list: readonly OutboxRecord[] = Object.freeze([]);
  /** Discarded, deleted, cleared: never shown or written again. */
  const gone = new Set<string>();
  /** This tab's storage operations, one after another; never rejects. */
  let chain: Promise<unknown> = Promise.resolve();
  /** A storage read not started yet, which later requests share. */
  let reading: Promise<readonly LifelineError[]> | undefined;
  let closed = false;

  const offer = acceptanceHandOff(deps, (operationId) => void drop(operationId));
  const find = (operationId: string): OutboxRecord | undefined => list.find((entry) => entry.operationId === operationId);

  /** Replaces (with no `entry`: removes) one entry of the list. */
  const set = (operationId: string, entry?: OutboxRecord): void => {
    if (closed) return;
    const rest = list.filter((other) => other.operationId !== operationId);
    list = Object.freeze((entry ? [...rest, entry] : rest).sort((a, b) => a.order - b.order));
    deps.changed();
  };

  /** Runs a storage write after this tab's earlier ones, then notifies. Resolves with the error, if any. */
  const queue = (write: () => Promise<void>, notice: string | null): Promise<StorageError | void> =>
    (chain = chain.then(write).then(() => void (closed || deps.notify(notice)), deps.trouble)) as Promise<StorageError | void>;

  const forget = (operationId: string): void => {
    gone.add(operationId);
    busy.get(operationId)?.abort();
    set(operationId);
  };

  const drop = async (operationId: string): Promise<void> => {
    if (gone.has(operationId) || !find(operationId)) return;
    forget(operationId);
    deps.journal.remove(operationId);
    await queue(() => storage.deleteOutbox(operationId), operationId);
  };

  const save = (entry: OutboxRecord): Promise<StorageError | void> => {
    if (gone.has(entry.operationId)) return Promise.resolve();
    // Queued before the change shows, so a re-read asked for after the change also follows its write.
    const written = queue(() => storage.putOutbox(entry), null);
    set(entry.operationId, entry);
    // The link operation → turn is durable before anyone follows the turn.
    return written.finally(() => offer(entry));
  };

  /**
   * Entries changed here since the read was asked for keep the local state (their writes
   * come after it); entries missing from storage are kept (deletions arrive as notices,
   * and a store swapped for a fresh one must not wipe pending messages).
   */
  const reload = (): Promise<readonly LifelineError[]> => {
    const before = list;
    return (reading ??= chain
      .then(async () => {
        reading = undefined;
        const { items, skipped } = await storage.loadOutbox();
        for (const stored of items) {
          const current = find(stored.operationId);
          // Entries only leave the list through `forget` (into `gone`), and are replaced, never mutated.
          if (gone.has(stored.operationId) || (current && (!before.includes(current) || progress(current) === progress(stored)))) continue;
          set(stored.operationId, stored);
          offer(stored);
        }
        return skipped;
      })
      .catch((error: unknown) => (deps.trouble(error), [])));
  };

  return { list: () => list, find, save, forget, drop, reload, settled: () => chain, close: () => void (closed = true) };
}
