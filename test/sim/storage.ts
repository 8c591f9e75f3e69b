/**
 * Simulated storage of one browser: a shared "disk" (a memory store every tab's facade
 * writes to, as tabs share IndexedDB) and one {@link Store} facade per tab that answers on
 * virtual time and injects faults: quota on the next writes, the whole store unavailable,
 * a call that throws instead of rejecting, corrupt records. The facade mirrors the outbox
 * records that actually landed, so the invariants can ask synchronously what is durable.
 * The `localStorage` of the outbox journal is simulated here too (with a full quota).
 */
import { createMemoryStore, type MemoryStore } from '../../src/storage/memory-store.js';
import { corruptRecord } from '../../src/storage/records.js';
import { StorageError } from '../../src/errors.js';
import type { Store } from '../../src/storage/store.js';
import type { Rng } from './rng.js';
import type { Scheduler } from './scheduler.js';

export interface StorageFaults {
  /** The next this many writes (rows, chunks, outbox records) fail with a quota error. */
  quotaNext: number;
  /** Every call fails (IndexedDB refused, a private window, the disk gone). */
  unavailable: boolean;
  /** The next this many calls throw synchronously (a store with a bug). */
  throwNext: number;
  /** The next load of turns also reports this many corrupt records it skipped. */
  corruptNext: number;
  /** `localStorage.setItem` throws `QuotaExceededError`. */
  journalFull: boolean;
}

export const CALM_STORAGE: StorageFaults = { quotaNext: 0, unavailable: false, throwNext: 0, corruptNext: 0, journalFull: false };

export interface SimDisk {
  readonly disk: MemoryStore;
  faults: StorageFaults;
  /** Some storage fault was set during the run (a message the journal refused may then be lost unavoidably). */
  troubled: boolean;
  /** Outbox records that landed on the disk (not in a tab's memory fallback), by operation id. */
  readonly durableOutbox: ReadonlySet<string>;
  /** Corrupt records injected so far: only these may be reported as `storage_corrupt_record`. */
  readonly corrupted: number;
  /** A store facade for the tab `owner`. */
  storeFor(owner: string): Store;
  readonly localStorage: Storage;
}

const WRITES = new Set(['write', 'putOutbox', 'deleteOutbox', 'deleteTurn', 'sweepEnded', 'clear', 'tryLease', 'releaseLease']);

export function createSimDisk(rng: Rng, scheduler: Scheduler): SimDisk {
  const disk = createMemoryStore();
  const faults: StorageFaults = { ...CALM_STORAGE };
  const durableOutbox = new Set<string>();
  let corrupted = 0;

  const storeFor = (owner: string): Store => {
    /** Answers `call` on the disk after an IndexedDB-like delay, or fails by the current faults. */
    const run = <T>(method: string, call: () => Promise<T>, landed?: (value: T) => void): Promise<T> => {
      if (faults.throwNext > 0) {
        faults.throwNext--;
        throw new TypeError(`sim: ${method} threw`);
      }
      return new Promise<T>((resolve, reject) => {
        scheduler.task(() => {
          if (faults.unavailable) return reject(new StorageError('storage_unavailable', 'sim: storage unavailable'));
          if (WRITES.has(method) && method !== 'tryLease' && faults.quotaNext > 0) {
            faults.quotaNext--;
            return reject(new StorageError('storage_quota_exceeded', 'sim: quota exceeded'));
          }
          call().then((value) => {
            landed?.(value);
            resolve(value);
          }, reject);
        }, rng.int(0, 3), owner);
      });
    };
    const store: Store = {
      kind: 'sim-indexeddb',
      open: () => run('open', () => disk.open()),
      close: () => undefined,
      loadTurns: (filter) =>
        run('loadTurns', async () => {
          const result = await disk.loadTurns(filter);
          const extra = Array.from({ length: faults.corruptNext }, (_, i) => corruptRecord('turns', `sim-corrupt-${corrupted + i}`));
          corrupted += extra.length;
          faults.corruptNext = 0;
          return { items: result.items, skipped: [...result.skipped, ...extra] };
        }),
      loadTurn: (turnId) => run('loadTurn', () => disk.loadTurn(turnId)),
      write: (items) => run('write', () => disk.write(items)),
      deleteTurn: (turnId) => run('deleteTurn', () => disk.deleteTurn(turnId)),
      sweepEnded: (before) => run('sweepEnded', () => disk.sweepEnded(before)),
      loadOutbox: () => run('loadOutbox', () => disk.loadOutbox()),
      putOutbox: (record) => run('putOutbox', () => disk.putOutbox(record), () => durableOutbox.add(record.operationId)),
      deleteOutbox: (operationId) => run('deleteOutbox', () => disk.deleteOutbox(operationId), () => durableOutbox.delete(operationId)),
      // The disk's lease is always free: one tab leads, by Web Lock, in the simulated browser.
      tryLease: (name, leaseOwner, ttlMs, now) => run('tryLease', () => disk.tryLease(name, leaseOwner, ttlMs, now)),
      releaseLease: (name, leaseOwner) => run('releaseLease', () => disk.releaseLease(name, leaseOwner)),
      clear: () => run('clear', () => disk.clear(), () => durableOutbox.clear()),
    };
    return store;
  };

  return {
    disk,
    troubled: false,
    get faults() {
      return faults;
    },
    set faults(next) {
      Object.assign(faults, next);
    },
    durableOutbox,
    get corrupted() {
      return corrupted;
    },
    storeFor,
    localStorage: createSimLocalStorage(() => faults.journalFull),
  };
}

/** A `Storage` over a Map, in key order of insertion; `full()` makes `setItem` throw as a full quota does. */
export function createSimLocalStorage(full: () => boolean): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (key) => items.get(key) ?? null,
    setItem(key, value) {
      if (full()) throw new DOMException('sim: localStorage full', 'QuotaExceededError');
      items.set(key, String(value));
    },
    removeItem: (key) => void items.delete(key),
    clear: () => items.clear(),
  };
}
