/**
 * The outbox journal: `send()` also writes each new entry to `localStorage`, synchronously,
 * until its IndexedDB write has landed. A reload in between (the soak's lost submission)
 * cannot lose it: the next page's `start()` adopts what the journal still holds. Keys are
 * `lifeline-outbox:<namespace>:<operationId>`, one entry each, as JSON.
 *
 * Every call is best effort (storage/page-records.ts): storage that is full or refused
 * (blocked cookies) leaves IndexedDB alone to keep the entry, as before there was a journal.
 */
import type { StorageError } from '../errors.js';
import type { KeyValueStorage } from '../ports/storage.js';
import { createPageRecords } from '../storage/page-records.js';
import { corruptRecord, outboxRecordSchema } from '../storage/records.js';
import type { OutboxRecord } from '../storage/store.js';

/** The part of `Storage` the journal uses. */
export type JournalStorage = KeyValueStorage;

export interface Journal {
  /** Writes a copy of a new entry, synchronously. */
  write(entry: OutboxRecord): void;
  /** Removes an entry's copy (its storage write landed, or it was deleted). */
  remove(operationId: string): void;
  /** Removes every copy of this namespace, other tabs' in-flight ones too (logout). */
  clear(): void;
  /**
   * Hands `put` every copy a page journaled, to store those storage does not hold yet. A
   * copy is removed only once `put` answers without an error (a reload during this loses
   * nothing either); a corrupt one is reported and removed.
   */
  adopt(put: (entry: OutboxRecord) => Promise<StorageError | void>, report: (error: StorageError) => void): Promise<void>;
}

/** A journal of the entries named `<prefix>:<operationId>` in `storage`; none at all without one. */
export function createJournal(storage: JournalStorage | undefined, prefix: string): Journal {
  const copies = createPageRecords(storage, prefix + ':');
  return {
    write: (entry) => copies.write(entry.operationId, entry),
    remove: copies.remove,
    clear: () => copies.ids().forEach(copies.remove),
    async adopt(put, report) {
      // Read up front: while `put` waits, this or another tab may remove a copy whose entry landed.
      const found = copies.ids().map((operationId) => [operationId, copies.read(operationId)] as const);
      for (const [operationId, value] of found) {
        const parsed = outboxRecordSchema.safeParse(value);
        if (!parsed.success) report(corruptRecord('journal', operationId));
        // Kept when the write failed: the next start tries again.
        else if (await put(parsed.data as OutboxRecord)) continue;
        // A removal storage refuses is harmless: the next start adopts the same record again.
        copies.remove(operationId);
      }
    },
  };
}
