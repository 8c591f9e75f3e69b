/**
 * The outbox journal: `send()` also writes each new entry to `localStorage`, synchronously,
 * until its IndexedDB write has landed. A reload in between (the soak's lost submission)
 * cannot lose it: the next page's `start()` adopts what the journal still holds. Keys are
 * `lifeline-outbox:<namespace>:<operationId>`, one entry each, as JSON.
 *
 * Every call is best effort: storage that is full or refused (blocked cookies) leaves
 * IndexedDB alone to keep the entry, as before there was a journal.
 */
import { StorageError } from '../errors.js';
import type { KeyValueStorage } from '../ports/storage.js';
import { outboxRecordSchema } from '../storage/records.js';
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
  const removeKey = (key: string): void => {
    try {
      storage?.removeItem(key);
    } catch {
      // Storage refused: the next start imports it again, harmlessly (same key, same record).
    }
  };

  /** This namespace's copies; a value that is not JSON is `undefined` (reported as corrupt on adoption). */
  const copies = (): [key: string, value: unknown][] => {
    const found: [string, unknown][] = [];
    try {
      for (let i = storage?.length ?? 0; i--; ) {
        const key = storage!.key(i);
        if (!key?.startsWith(prefix + ':')) continue;
        let value: unknown;
        try {
          value = JSON.parse(storage!.getItem(key) ?? 'null');
        } catch {
          // Left undefined.
        }
        found.push([key, value]);
      }
    } catch {
      // Storage refused: IndexedDB alone.
    }
    return found;
  };

  return {
    write(entry) {
      try {
        storage?.setItem(`${prefix}:${entry.operationId}`, JSON.stringify(entry));
      } catch {
        // Full or refused: IndexedDB alone.
      }
    },
    remove: (operationId) => removeKey(`${prefix}:${operationId}`),
    clear: () => copies().forEach(([key]) => removeKey(key)),
    async adopt(put, report) {
      for (const [key, value] of copies()) {
        const parsed = outboxRecordSchema.safeParse(value);
        if (!parsed.success) report(new StorageError('storage_corrupt_record', 'Skipped a corrupt journaled outbox entry.'));
        // Kept when the write failed: the next start tries again.
        else if (await put(parsed.data as OutboxRecord)) continue;
        removeKey(key);
      }
    },
  };
}
