/**
 * Records kept in the page's synchronous key-value storage (`localStorage`), one key each,
 * `<prefix><id>`, as JSON: the outbox journal and the delivery receipts waiting to land.
 * One key per record, so tabs never overwrite each other's.
 *
 * Every call is best effort: storage that is missing, full or refused (blocked cookies)
 * reads as empty and writes nothing, and the caller's other copy (IndexedDB, memory)
 * carries on alone.
 */
import type { KeyValueStorage } from '../ports/storage.js';

export interface PageRecords {
  /** The ids of every record under the prefix, other tabs' too. */
  ids(): string[];
  /** A record's JSON value; `undefined` when there is none or it is not JSON. */
  read(id: string): unknown;
  write(id: string, value: unknown): void;
  remove(id: string): void;
}

export function createPageRecords(storage: KeyValueStorage | undefined, prefix: string): PageRecords {
  return {
    ids: () =>
      safely(() => {
        const ids: string[] = [];
        for (let i = storage?.length ?? 0; i--; ) {
          const key = storage!.key(i);
          if (key?.startsWith(prefix)) ids.push(key.slice(prefix.length));
        }
        return ids;
      }, []),
    read: (id) => safely(() => JSON.parse(storage?.getItem(prefix + id) ?? 'null') ?? undefined, undefined),
    write: (id, value) => safely(() => storage?.setItem(prefix + id, JSON.stringify(value)), undefined),
    remove: (id) => safely(() => storage?.removeItem(prefix + id), undefined),
  };
}

function safely<T>(step: () => T, fallback: T): T {
  try {
    return step();
  } catch {
    return fallback;
  }
}
