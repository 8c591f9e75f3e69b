/**
 * The IndexedDB store's connection and transactions: opened lazily (with a timeout, so a
 * blocked upgrade settles), dropped and reopened when the browser or a newer tab takes it
 * away, and one helper that runs a transaction to its durable end with typed failures.
 */
import { wrap, type IDBPTransaction, type StoreNames } from 'idb';
import { isStorageError, StorageError, type LifelineErrorCode } from '../errors.js';
import { platformIndexedDb } from '../ports/indexeddb.js';
import { realTimers, type TimerHandle } from '../ports/timers.js';
import { SCHEMA_VERSION, upgradeDatabase, type LifelineDb, type LifelineDbSchema } from './schema.js';

/** Options of {@link createIndexedDbStore}. */
export interface IndexedDbStoreOptions {
  /**
   * Partition of local data, e.g. the user id. Each namespace is its own database,
   * `lifeline:<namespace>`. Default `'default'`.
   */
  namespace?: string;
  /**
   * Longest wait for the database to open, ms. Past it `open()` (and every call waiting
   * on it) rejects: `storage_blocked` when an older tab holds the database and does not
   * let go, else `storage_unavailable`. Default 5 000.
   */
  openTimeoutMs?: number;
  /**
   * The `IDBFactory` to open with. Default `globalThis.indexedDB`. Meant for tests
   * (`new IDBFactory()` from fake-indexeddb per test); the IndexedDB classes of the same
   * implementation must be the globals (`fake-indexeddb/auto`), as idb checks them.
   */
  indexedDB?: IDBFactory;
}

export type Names = StoreNames<LifelineDbSchema>;
export type Tx<N extends Names[], M extends IDBTransactionMode> = IDBPTransaction<LifelineDbSchema, N, M>;

/**
 * Runs `body` in one transaction and resolves once the transaction is done: a quota
 * abort can resolve every request and reject only `tx.done`. `body` may await only
 * requests of `tx`. On failure the transaction is aborted, so nothing half-written
 * commits. A connection found closed is dropped and the call retried once on a fresh
 * one: the lost transaction committed nothing.
 */
export type Run = <const N extends Names[], M extends IDBTransactionMode, R>(names: N, mode: M, body: (tx: Tx<N, M>) => Promise<R>) => Promise<R>;

export interface Connection {
  /** Opens the database (or answers the connection being opened). */
  connect(): Promise<LifelineDb>;
  run: Run;
  /** Lets go of the database (so it blocks no other tab); a later call opens a new connection. */
  close(): void;
}

/** The connection to `databaseName`; `trouble` hears of a connection lost outside any call. */
export function createConnection(databaseName: string, options: IndexedDbStoreOptions, trouble: (error: StorageError) => void): Connection {
  /** The connection being opened or open; undefined until first use and after it was lost. */
  let connection: Promise<LifelineDb> | undefined;

  /** Closes `db` and forgets it (if still current), so the next call opens a fresh one; reports why when told. */
  const drop = (opening: Promise<LifelineDb>, db: LifelineDb, why?: string): void => {
    db.close();
    if (connection == opening) connection = undefined;
    if (why) trouble(new StorageError('storage_closed', why));
  };

  const connect = (): Promise<LifelineDb> => {
    if (connection) return connection;
    const opening: Promise<LifelineDb> = openDatabase(databaseName, options).then((db) => {
      // A newer tab wants to upgrade or delete the database: let it. Either way the next call reopens.
      db.onversionchange = () => drop(opening, db, 'Another tab upgraded or deleted the database.');
      db.onclose = () => drop(opening, db, 'The browser closed the database.');
      return db;
    });
    opening.catch(() => connection == opening && (connection = undefined));
    return (connection = opening);
  };

  const run = async <const N extends Names[], M extends IDBTransactionMode, R>(names: N, mode: M, body: (tx: Tx<N, M>) => Promise<R>, again = true): Promise<R> => {
    const opening = connect();
    const db = await opening;
    let tx: Tx<N, M> | undefined;
    try {
      tx = db.transaction(names, mode);
      const result = await body(tx);
      await tx.done;
      return result;
    } catch (cause) {
      try {
        tx?.abort();
      } catch {
        // Already aborted or finished.
      }
      await tx?.done.catch(() => undefined);
      // The transaction's own error (quota, disk) says more than a request's AbortError.
      const failure = (tx?.error ?? cause) as Error;
      // InvalidStateError: the connection is closing. AbortError: aborted without a cause of its own (a forced close).
      const code: LifelineErrorCode =
        failure.name == 'QuotaExceededError'
          ? 'storage_quota_exceeded'
          : /^(InvalidState|Abort)Error$/.test(failure.name)
            ? 'storage_closed'
            : mode == 'readonly'
              ? 'storage_unavailable'
              : 'storage_write_failed';
      if (again && code == 'storage_closed') {
        drop(opening, db);
        return run(names, mode, body, false);
      }
      throw new StorageError(code, `IndexedDB failed (${failure.name}).`, { cause: failure });
    }
  };

  return {
    connect,
    run: (names, mode, body) => run(names, mode, body),
    close() {
      connection?.then((db) => db.close(), () => undefined);
      connection = undefined;
    },
  };
}

/**
 * Opens `lifeline:<namespace>` through the configured factory (idb's `openDB` always uses
 * the global one), with a timeout: a `blocked` upgrade (an older tab that does not let
 * go) must settle, as `storage_blocked`, not hang.
 */
async function openDatabase(name: string, options: IndexedDbStoreOptions): Promise<LifelineDb> {
  let blocked: IDBVersionChangeEvent | undefined;
  let timer: TimerHandle | undefined;
  try {
    const factory = options.indexedDB ?? platformIndexedDb();
    if (!factory) throw new StorageError('storage_unavailable', 'IndexedDB is missing.');
    const request = factory.open(name, SCHEMA_VERSION);
    request.onupgradeneeded = (event) => upgradeDatabase(wrap(request.result) as LifelineDb, event.oldVersion);
    request.onblocked = (event) => (blocked = event);
    const opening = wrap(request) as Promise<LifelineDb>;
    return await Promise.race([
      opening,
      new Promise<never>((_, reject) => {
        timer = realTimers.set(() => {
          // Nobody waits for a connection that arrives later: close it at once.
          opening.then((db) => db.close(), () => undefined);
          reject(
            blocked
              ? new StorageError('storage_blocked', 'An older tab holds the database open.', {
                  details: { heldVersion: blocked.oldVersion, wantedVersion: blocked.newVersion },
                })
              : new StorageError('storage_unavailable', 'Opening the database timed out.'),
          );
        }, options.openTimeoutMs ?? 5_000);
      }),
    ]);
  } catch (cause) {
    // Missing or refused IndexedDB (private modes), or a newer version owns the database (VersionError).
    throw isStorageError(cause) ? cause : new StorageError('storage_unavailable', `IndexedDB could not open (${(cause as Error)?.name}).`, { cause });
  } finally {
    realTimers.clear(timer);
  }
}
