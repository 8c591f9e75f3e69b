/**
 * The IndexedDB `Store` (via idb). One database per namespace, every write one
 * transaction that resolves only once durable (`tx.done`), every failure a typed
 * `StorageError`.
 */
import { wrap, type IDBPTransaction, type StoreNames } from 'idb';
import { isStorageError, StorageError, type LifelineErrorCode } from '../errors.js';
import { chunkWins, joinChunks, nextRow } from './monotonic.js';
import { checkAll, corruptRecord, outboxRecordSchema, turnRecordSchema } from './records.js';
import { SCHEMA_VERSION, upgradeDatabase, type LifelineDb, type LifelineDbSchema } from './schema.js';
import type { EventChunk, Store } from './store.js';

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

/** The store returned by {@link createIndexedDbStore}. */
export interface IndexedDbStore extends Store {
  readonly kind: 'indexeddb';
  /** `lifeline:<namespace>`. */
  readonly databaseName: string;
}

/**
 * True when this environment exposes IndexedDB at all. It may still fail to open
 * (private modes, disabled storage): the store reports that as `storage_unavailable`.
 */
export function isIndexedDbAvailable(): boolean {
  return !!globalThis.indexedDB;
}

type Names = StoreNames<LifelineDbSchema>;
type Tx<N extends Names[], M extends IDBTransactionMode> = IDBPTransaction<LifelineDbSchema, N, M>;

const STORES: Names[] = ['turns', 'chunks', 'outbox', 'leases'];

/** Every key `[turnId, seq]` of one turn's chunks. */
const chunkRange = (turnId: string): IDBKeyRange => IDBKeyRange.bound([turnId, 0], [turnId, Infinity]);

/** The requests deleting a turn's chunks and (unless `keepRow`) its row. */
const remove = (tx: Tx<['turns', 'chunks'], 'readwrite'>, turnId: string, keepRow?: boolean): Promise<unknown>[] => [
  tx.objectStore('chunks').delete(chunkRange(turnId)),
  ...(keepRow ? [] : [tx.objectStore('turns').delete(turnId)]),
];

/** Most events in one stored chunk record (about 2–3 ms of structured cloning); a bigger chunk is stored as consecutive records. */
const RECORD_EVENTS = 1024;

/** Cuts a chunk (consecutive seqs) into records of at most {@link RECORD_EVENTS} events. */
const split = ({ turnId, firstSeq, events }: EventChunk): EventChunk[] => {
  const records: EventChunk[] = [];
  for (let at = 0; at < events.length; at += RECORD_EVENTS) {
    const part = events.slice(at, at + RECORD_EVENTS);
    records.push({ turnId, firstSeq: firstSeq + at, lastSeq: firstSeq + at + part.length - 1, events: part });
  }
  return records;
};

/**
 * Creates the IndexedDB-backed {@link Store}. Opens lazily on first use (or `open()`);
 * reopens lazily after the browser closed the database underneath (Clear-Site-Data,
 * DevTools) or after this tab let a newer tab upgrade it.
 *
 * @example
 * const store = createIndexedDbStore({ namespace: user.id });
 * store.onTrouble = (error) => console.warn(error.code);
 * await store.open();
 */
export function createIndexedDbStore(options: IndexedDbStoreOptions = {}): IndexedDbStore {
  const databaseName = `lifeline:${options.namespace ?? 'default'}`;
  /** The connection being opened or open; undefined until first use and after it was lost. */
  let connection: Promise<LifelineDb> | undefined;

  /** Closes `db` and forgets it (if still current), so the next call opens a fresh one; reports why when told. */
  const drop = (opening: Promise<LifelineDb>, db: LifelineDb, why?: string): void => {
    db.close();
    if (connection == opening) connection = undefined;
    if (why) store.onTrouble?.(new StorageError('storage_closed', why));
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

  /**
   * Runs `body` in one transaction and resolves once the transaction is done: a quota
   * abort can resolve every request and reject only `tx.done`. `body` may await only
   * requests of `tx`. On failure the transaction is aborted, so nothing half-written
   * commits. A connection found closed is dropped and the call retried once on a fresh
   * one: the lost transaction committed nothing.
   */
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

  /** A read-write transaction on a turn's row and chunks. */
  const turnsTx = <R>(body: (tx: Tx<['turns', 'chunks'], 'readwrite'>) => Promise<R>): Promise<R> => run(['turns', 'chunks'], 'readwrite', body);

  /**
   * Rows (the last one given for a turn wins) by the rules of `monotonic.ts`, chunks that
   * are not shorter than what their key holds, and for a fold (a row with `text`) the
   * deletion of the turn's chunks. What is stored is read in this transaction: another tab
   * may have folded these turns, got further, or stored a longer chunk under the same key.
   */
  const write: Store['write'] = (items) =>
    turnsTx(async (tx) => {
      const turns = tx.objectStore('turns');
      const chunks = tx.objectStore('chunks');
      const rows = [...new Map(items.map(({ record }) => [record.id, record])).values()];
      const next = await Promise.all(rows.map(async (row) => nextRow(await turns.get(row.id), row)));
      const kept = new Set(next.map((row) => row?.id));
      await Promise.all(rows.flatMap((row) => (row.text === undefined ? [] : remove(tx, row.id, true))));
      // put() clones its value on the main thread: one record at a time, each awaited, so a
      // burst's write is many short tasks (the stream goes on between them), not one long one.
      // A value refused synchronously (DataCloneError) throws here and aborts the transaction.
      for (const chunk of items.flatMap(({ chunk }) => (chunk ? split(chunk) : []))) {
        if (kept.has(chunk.turnId) && chunkWins(await chunks.get([chunk.turnId, chunk.firstSeq]), chunk)) await chunks.put(chunk);
      }
      await Promise.all(next.map(async (row) => row && turns.put(row)));
    });

  const store: IndexedDbStore = {
    kind: 'indexeddb',
    databaseName,
    open: async () => void (await connect()),
    /** Lets go of the database (so it blocks no other tab); a later call opens a new connection. */
    close() {
      connection?.then((db) => db.close(), () => undefined);
      connection = undefined;
    },
    async loadTurns({ unfinished, conversationId } = {}) {
      const values = await run(['turns'], 'readonly', ({ store: turns }) =>
        conversationId !== undefined
          ? turns.index('by-conversation').getAll(conversationId)
          : // Above 'failed' (the last ended status in key order): every live status, and a foreign one there (reported).
            unfinished
            ? turns.index('by-status').getAll(IDBKeyRange.lowerBound('failed', true))
            : turns.getAll(),
      );
      return checkAll(turnRecordSchema, 'turns', values, 'id');
    },
    async loadTurn(turnId) {
      const [row, chunks] = await run(['turns', 'chunks'], 'readonly', (tx) =>
        Promise.all([tx.objectStore('turns').get(turnId), tx.objectStore('chunks').getAll(chunkRange(turnId))]),
      );
      if (!row) return undefined;
      const record = turnRecordSchema.safeParse(row).data;
      if (!record) throw corruptRecord('turns', turnId);
      return joinChunks(record, chunks);
    },
    write,
    async deleteTurn(turnId) {
      await turnsTx((tx) => Promise.all(remove(tx, turnId)));
    },
    sweepEnded: (before) =>
      turnsTx(async (tx) => {
        // Keys only: old texts are deleted, not read.
        const ids = await tx.objectStore('turns').index('by-ended').getAllKeys(IDBKeyRange.upperBound(before, true));
        await Promise.all(ids.flatMap((id) => remove(tx, id)));
        return ids.length;
      }),
    async loadOutbox() {
      return checkAll(outboxRecordSchema, 'outbox', await run(['outbox'], 'readonly', (tx) => tx.store.index('by-order').getAll()), 'operationId');
    },
    async putOutbox(record) {
      await run(['outbox'], 'readwrite', (tx) => tx.store.put(record));
    },
    async deleteOutbox(operationId) {
      await run(['outbox'], 'readwrite', (tx) => tx.store.delete(operationId));
    },
    tryLease: (name, owner, ttlMs, now) =>
      run(['leases'], 'readwrite', async ({ store: leases }) => {
        // Free when unheld, expired, unreadable, or already `owner`'s.
        const lease = await leases.get(name);
        const free = lease?.owner == owner || !(lease?.expiresAt! > now);
        if (free) await leases.put({ name, owner, expiresAt: now + ttlMs });
        return free;
      }),
    releaseLease: (name, owner) =>
      run(['leases'], 'readwrite', async ({ store: leases }) => {
        if ((await leases.get(name))?.owner == owner) await leases.delete(name);
      }),
    async clear() {
      // Clearing the stores, not deleting the database: other tabs keep a working connection.
      await run(STORES, 'readwrite', (tx) => Promise.all(STORES.map((name) => tx.objectStore(name).clear())));
    },
  };
  return store;
}

/**
 * Opens `lifeline:<namespace>` through the configured factory (idb's `openDB` always uses
 * the global one), with a timeout: a `blocked` upgrade (an older tab that does not let
 * go) must settle, as `storage_blocked`, not hang.
 */
async function openDatabase(name: string, options: IndexedDbStoreOptions): Promise<LifelineDb> {
  let blocked: IDBVersionChangeEvent | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const request = (options.indexedDB ?? indexedDB).open(name, SCHEMA_VERSION);
    request.onupgradeneeded = (event) => upgradeDatabase(wrap(request.result) as LifelineDb, event.oldVersion);
    request.onblocked = (event) => (blocked = event);
    const opening = wrap(request) as Promise<LifelineDb>;
    return await Promise.race([
      opening,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
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
    clearTimeout(timer);
  }
}
