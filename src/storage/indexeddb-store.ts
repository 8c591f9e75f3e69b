/**
 * The IndexedDB `Store` (via idb). One database per namespace, every write one
 * transaction that resolves only once durable, every failure a typed `StorageError`.
 */
import { wrap, type IDBPTransaction, type StoreNames } from 'idb';
import { isStorageError, StorageError } from '../errors.js';
import type { TurnEvent } from '../protocol/schemas.js';
import {
  checkChunk,
  checkRecord,
  chunkProblem,
  corruptRecord,
  ENDED_STATUSES,
  leaseRecordSchema,
  outboxRecordSchema,
  turnRecordSchema,
} from './records.js';
import { chunkWins, foldWins, nextRow, storedRow } from './monotonic.js';
import { SCHEMA_VERSION, upgradeDatabase, type LifelineDb, type LifelineDbSchema, type UpgradeTransaction } from './schema.js';
import type { EventChunk, LoadedTurn, LoadResult, OutboxRecord, Store, TurnRecord } from './store.js';

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

/** One turn's share of a batched write: its chunk and its updated row. */
export interface ChunkWrite {
  record: TurnRecord;
  chunk: EventChunk;
}

/** The store returned by {@link createIndexedDbStore}. */
export interface IndexedDbStore extends Store {
  readonly kind: 'indexeddb';
  /** `lifeline:<namespace>`. */
  readonly databaseName: string;
  /** One transaction for chunks of several turns (one flush of the persistence layer). */
  appendChunks(items: readonly ChunkWrite[]): Promise<void>;
}

/** Default of {@link IndexedDbStoreOptions.openTimeoutMs}. */
export const DEFAULT_OPEN_TIMEOUT_MS = 5_000;

/**
 * True when this environment exposes IndexedDB at all. It may still fail to open
 * (private modes, disabled storage): the store reports that as `storage_unavailable`.
 */
export function isIndexedDbAvailable(): boolean {
  return typeof indexedDB !== 'undefined' && indexedDB !== null;
}

/**
 * Creates the IndexedDB-backed {@link Store}. Opens lazily on first use (or `open()`);
 * reopens lazily after the browser closed the database underneath (Clear-Site-Data,
 * DevTools) or after this tab let a newer tab upgrade it. Throws `invalid_argument`
 * for a bad namespace or timeout.
 *
 * @example
 * const store = createIndexedDbStore({ namespace: user.id });
 * store.onTrouble = (error) => console.warn(error.code);
 * await store.open();
 */
export function createIndexedDbStore(options: IndexedDbStoreOptions = {}): IndexedDbStore {
  return new IndexedDbStoreImpl(options);
}

type Names = StoreNames<LifelineDbSchema>;
type Tx<N extends Names[], M extends IDBTransactionMode> = IDBPTransaction<LifelineDbSchema, N, M>;
type Operation = 'read' | 'write';

const ALL_STORES: Names[] = ['turns', 'chunks', 'outbox', 'leases'];

/** Every key `[turnId, seq]` of one turn's chunks. */
function chunkRange(turnId: string): IDBKeyRange {
  return IDBKeyRange.bound([turnId, 0], [turnId, Infinity]);
}

/**
 * Index ranges of `by-status` that hold every row whose status is not ended. Ended
 * statuses are exact keys; the ranges between and around them catch the rest, including
 * a foreign status, so it is found and reported rather than silently left behind.
 */
function unfinishedRanges(): IDBKeyRange[] {
  const ended = [...ENDED_STATUSES].sort();
  const ranges: IDBKeyRange[] = [IDBKeyRange.upperBound(ended[0] as string, true)];
  for (let i = 1; i < ended.length; i++) ranges.push(IDBKeyRange.bound(ended[i - 1] as string, ended[i] as string, true, true));
  ranges.push(IDBKeyRange.lowerBound(ended[ended.length - 1] as string, true));
  return ranges;
}

function errorName(cause: unknown): string | undefined {
  if (typeof cause !== 'object' || cause === null) return undefined;
  const name = (cause as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

/** Maps whatever IndexedDB threw to a StorageError with a stable code. */
function toStorageError(cause: unknown, operation: Operation, databaseName: string): StorageError {
  if (isStorageError(cause)) return cause;
  const name = errorName(cause) ?? 'Error';
  const reason = cause instanceof Error && cause.message ? `${name}: ${cause.message}` : name;
  switch (name) {
    case 'QuotaExceededError':
      return new StorageError('storage_quota_exceeded', `The storage quota is exhausted; the write to "${databaseName}" was rolled back.`, { cause });
    // InvalidStateError: the connection is closing. AbortError: a transaction aborted
    // without a cause of its own, which is what a forced close does to running ones.
    case 'InvalidStateError':
    case 'AbortError':
      return new StorageError('storage_closed', `The connection to "${databaseName}" was closed (${reason}).`, { cause });
    case 'DataCloneError':
    case 'DataError':
      return new StorageError('invalid_argument', `IndexedDB refused the value (${reason}).`, { cause });
    case 'NotFoundError':
    case 'VersionError':
      return new StorageError('storage_unavailable', `"${databaseName}" does not have the expected layout (${reason}).`, { cause });
    default:
      return operation === 'write'
        ? new StorageError('storage_write_failed', `Writing to "${databaseName}" failed (${reason}).`, { cause })
        : new StorageError('storage_unavailable', `Reading from "${databaseName}" failed (${reason}).`, { cause });
  }
}

function invalid(message: string, details?: unknown): StorageError {
  return new StorageError('invalid_argument', message, details === undefined ? {} : { details });
}

/** Validates a row before it is written: storage must never receive what it would reject on load. */
function cleanTurn(record: TurnRecord): TurnRecord {
  const checked = checkRecord(turnRecordSchema, record, 'turns', typeof record?.id === 'string' ? record.id : undefined);
  if (!checked.ok) throw invalid(`Refused to store an invalid turn record: ${checked.error.message}`, checked.error.details);
  return checked.value;
}

/**
 * Checks a chunk on the write path. Its events were validated when they arrived, so only
 * the cheap shape checks run here, and only the four known fields are copied.
 */
function cleanChunk(record: TurnRecord, chunk: EventChunk): EventChunk {
  if (chunk.turnId !== record.id) throw invalid(`Chunk of turn ${chunk.turnId} written with the row of turn ${record.id}.`);
  if (!Number.isSafeInteger(chunk.firstSeq) || chunk.firstSeq < 1 || !Array.isArray(chunk.events)) {
    throw invalid(`Chunk of turn ${chunk.turnId} has an invalid firstSeq or events.`);
  }
  const problem = chunkProblem(chunk);
  if (problem !== undefined) throw invalid(`Refused to store an inconsistent chunk of turn ${chunk.turnId}: ${problem}.`);
  if (chunk.lastSeq > record.lastSeq) throw invalid(`Chunk of turn ${chunk.turnId} ends at seq ${chunk.lastSeq}, after the row's lastSeq ${record.lastSeq}.`);
  return { turnId: chunk.turnId, firstSeq: chunk.firstSeq, lastSeq: chunk.lastSeq, events: chunk.events };
}

/** Most events in one stored chunk record; a bigger chunk is stored as consecutive records. */
const MAX_RECORD_EVENTS = 1024;
/** Events cloned per task when a write holds many (about 2–3 ms of structured cloning). */
const CLONE_SLICE_EVENTS = 1024;

/** Cuts a chunk into records of at most {@link MAX_RECORD_EVENTS} consecutive events. */
function splitChunk(chunk: EventChunk): EventChunk[] {
  if (chunk.events.length <= MAX_RECORD_EVENTS) return [chunk];
  const records: EventChunk[] = [];
  for (let start = 0; start < chunk.events.length; start += MAX_RECORD_EVENTS) {
    const events = chunk.events.slice(start, start + MAX_RECORD_EVENTS);
    records.push({ turnId: chunk.turnId, firstSeq: chunk.firstSeq + start, lastSeq: chunk.firstSeq + start + events.length - 1, events });
  }
  return records;
}

function cleanOutbox(record: OutboxRecord): OutboxRecord {
  const key = typeof record?.operationId === 'string' ? record.operationId : undefined;
  const checked = checkRecord(outboxRecordSchema, record, 'outbox', key);
  if (!checked.ok) throw invalid(`Refused to store an invalid outbox record: ${checked.error.message}`, checked.error.details);
  return checked.value;
}

/** Validates every value of a bulk read; keys come from a parallel `getAllKeys` in the same order. */
function checkAll<T>(schema: Parameters<typeof checkRecord<T>>[0], storeName: string, values: unknown[], keys: IDBValidKey[]): LoadResult<T> {
  const result: LoadResult<T> = { items: [], skipped: [] };
  for (let i = 0; i < values.length; i++) {
    const checked = checkRecord(schema, values[i], storeName, keys[i]);
    if (checked.ok) result.items.push(checked.value);
    else result.skipped.push(checked.error);
  }
  return result;
}

/**
 * Joins a turn's chunks (in key order) into its events, keeping only the run that is
 * contiguous from seq 1. A chunk that fails validation, or a hole, ends the run and is
 * reported. The returned `lastSeq` is always the last event returned, so the client
 * replays the rest from the server instead of continuing over a hole.
 */
function joinChunks(record: TurnRecord, chunks: unknown[], keys: IDBValidKey[]): LoadedTurn {
  const events: TurnEvent[] = [];
  const skipped: StorageError[] = [];
  let last = 0;
  for (let i = 0; i < chunks.length; i++) {
    const checked = checkChunk(chunks[i], keys[i]);
    if (!checked.ok) {
      skipped.push(checked.error);
      break;
    }
    const chunk = checked.value;
    if (chunk.turnId !== record.id) {
      skipped.push(corruptRecord('chunks', keys[i], `chunk claims turn ${chunk.turnId}`));
      break;
    }
    if (chunk.firstSeq > last + 1) {
      skipped.push(corruptRecord('chunks', keys[i], `hole in the stored events: seq ${last + 1} to ${chunk.firstSeq - 1} missing`));
      break;
    }
    // A rewritten flush may overlap the previous chunk; each seq is taken once.
    for (const event of chunk.events) {
      if (event.seq === last + 1) {
        events.push(event);
        last = event.seq;
      }
    }
  }
  // The row may also be ahead without any corruption: a status update written before
  // the last buffered events were flushed, then the tab died. Either way the events
  // decide where the client resumes.
  return { record: last === record.lastSeq ? record : { ...record, lastSeq: last }, events, ...(skipped.length ? { skipped } : {}) };
}

/**
 * Issues several requests of one transaction and waits for all. If one throws
 * synchronously (a value IndexedDB cannot clone), the ones already issued will fail with
 * AbortError once the transaction aborts; they are marked handled first so that is not
 * an unhandled rejection.
 */
function allRequests(issue: (add: (request: Promise<unknown>) => void) => void): Promise<unknown[]> {
  const issued: Promise<unknown>[] = [];
  try {
    issue((request) => issued.push(request));
  } catch (cause) {
    for (const request of issued) request.catch(() => undefined);
    throw cause;
  }
  return Promise.all(issued);
}

/**
 * One transaction around `body`, settled only when the transaction is: a write counts
 * once `tx.done` resolves, because a quota abort can resolve the `put` and reject only
 * `tx.done`. If `body` fails (a request error, or a value refused synchronously after
 * earlier requests of the same write succeeded), the transaction is aborted so nothing
 * half-written commits.
 */
async function inTransaction<N extends Names[], M extends IDBTransactionMode, R>(
  db: LifelineDb,
  names: N,
  mode: M,
  body: (tx: Tx<N, M>) => Promise<R>,
): Promise<R> {
  const tx = db.transaction(names, mode);
  const done = tx.done;
  let result: R;
  try {
    result = await body(tx);
  } catch (cause) {
    try {
      tx.abort();
    } catch {
      // Already aborted by the failed request, or finished.
    }
    await done.catch(() => undefined);
    // The transaction's own error (quota, disk) says more than the request's AbortError.
    throw tx.error ?? cause;
  }
  try {
    await done;
  } catch (cause) {
    throw tx.error ?? cause;
  }
  return result;
}

class IndexedDbStoreImpl implements IndexedDbStore {
  readonly kind = 'indexeddb';
  readonly databaseName: string;
  onTrouble?: (error: StorageError) => void;

  readonly #factory: IDBFactory | undefined;
  readonly #openTimeoutMs: number;
  /** The connection being opened or open; undefined until first use and after it was lost. */
  #connection: Promise<LifelineDb> | undefined;
  #db: LifelineDb | undefined;

  constructor(options: IndexedDbStoreOptions) {
    const namespace = options.namespace ?? 'default';
    if (typeof namespace !== 'string' || namespace.length === 0 || namespace.length > 256) {
      throw invalid('namespace must be a string of 1 to 256 characters.');
    }
    const timeout = options.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS;
    if (!Number.isFinite(timeout) || timeout <= 0) throw invalid('openTimeoutMs must be a positive number.');
    this.databaseName = `lifeline:${namespace}`;
    this.#openTimeoutMs = timeout;
    this.#factory = options.indexedDB;
  }

  async open(): Promise<void> {
    await this.#connect();
  }

  /**
   * Closes the connection (so it blocks no other tab's upgrade or delete). A later call
   * opens a new one: the client still clears a store it stopped using, on logout.
   */
  close(): void {
    const connection = this.#connection;
    this.#connection = undefined;
    this.#db = undefined;
    // A connection still opening is closed as soon as it arrives (see #connect).
    connection?.then(
      (db) => db.close(),
      () => undefined,
    );
  }

  async loadTurns(filter: { unfinished?: boolean; conversationId?: string } = {}): Promise<LoadResult<TurnRecord>> {
    const [values, keys] = await this.#run(['turns'], 'readonly', async (tx) => {
      const turns = tx.objectStore('turns');
      if (filter.conversationId !== undefined) {
        const index = turns.index('by-conversation');
        return Promise.all([index.getAll(filter.conversationId), index.getAllKeys(filter.conversationId)]);
      }
      if (filter.unfinished) {
        const index = turns.index('by-status');
        const parts = await Promise.all(unfinishedRanges().map((range) => Promise.all([index.getAll(range), index.getAllKeys(range)])));
        return [parts.flatMap((part) => part[0]), parts.flatMap((part) => part[1])] as const;
      }
      return Promise.all([turns.getAll(), turns.getAllKeys()]);
    });
    const result = checkAll(turnRecordSchema, 'turns', values, keys);
    if (filter.unfinished) result.items = result.items.filter((row) => !ENDED_STATUSES.includes(row.status));
    result.items.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return result;
  }

  async loadTurn(turnId: string): Promise<LoadedTurn | undefined> {
    const [row, chunks, chunkKeys] = await this.#run(['turns', 'chunks'], 'readonly', (tx) => {
      const range = chunkRange(turnId);
      const chunkStore = tx.objectStore('chunks');
      return Promise.all([tx.objectStore('turns').get(turnId), chunkStore.getAll(range), chunkStore.getAllKeys(range)]);
    });
    if (row === undefined) return undefined;
    const checked = checkRecord(turnRecordSchema, row, 'turns', turnId);
    if (!checked.ok) throw checked.error;
    // A folded row carries the whole text; there are no chunks left to read.
    if (checked.value.text !== undefined) return { record: checked.value, events: [] };
    return joinChunks(checked.value, chunks, chunkKeys);
  }

  async putTurn(record: TurnRecord): Promise<void> {
    const row = cleanTurn(record);
    await this.#run(['turns'], 'readwrite', async (tx) => {
      const turns = tx.objectStore('turns');
      const next = nextRow(storedRow(await turns.get(row.id)), row);
      if (next !== undefined) await turns.put(next);
    });
  }

  appendChunk(record: TurnRecord, chunk: EventChunk): Promise<void> {
    return this.appendChunks([{ record, chunk }]);
  }

  async appendChunks(items: readonly ChunkWrite[]): Promise<void> {
    if (items.length === 0) return;
    // The last row given for a turn wins: it is the newest state of that turn.
    const rows = new Map<string, TurnRecord>();
    const records: EventChunk[] = [];
    for (const { record, chunk } of items) {
      const row = cleanTurn(record);
      records.push(...splitChunk(cleanChunk(row, chunk)));
      rows.set(row.id, row);
    }
    await this.#run(['turns', 'chunks'], 'readwrite', async (tx) => {
      const chunkStore = tx.objectStore('chunks');
      const turnStore = tx.objectStore('turns');
      // Read in this transaction: another tab on this database may have folded these
      // turns, got further, or stored a longer chunk under the same key.
      const ids = [...rows.keys()];
      const [stored, present] = await Promise.all([
        Promise.all(ids.map((id) => turnStore.get(id))),
        Promise.all(records.map((record) => chunkStore.get([record.turnId, record.firstSeq]))),
      ]);
      ids.forEach((id, i) => {
        const next = nextRow(storedRow(stored[i]), rows.get(id) as TurnRecord);
        if (next === undefined) rows.delete(id);
        else rows.set(id, next);
      });
      const writes = records.filter((record, i) => rows.has(record.turnId) && chunkWins(present[i], record));
      // put() clones its value on the main thread. A burst can hand over tens of
      // thousands of events at once; issuing them a slice per task (awaiting an
      // IndexedDB request keeps the transaction open) keeps that off one long task.
      let slice: EventChunk[] = [];
      let sliceEvents = 0;
      for (const record of writes) {
        if (sliceEvents + record.events.length > CLONE_SLICE_EVENTS && slice.length > 0) {
          const ready = slice;
          await allRequests((add) => {
            for (const chunk of ready) add(chunkStore.put(chunk));
          });
          slice = [];
          sliceEvents = 0;
        }
        slice.push(record);
        sliceEvents += record.events.length;
      }
      await allRequests((add) => {
        for (const chunk of slice) add(chunkStore.put(chunk));
        for (const row of rows.values()) add(turnStore.put(row));
      });
    });
  }

  async foldTurn(record: TurnRecord): Promise<void> {
    const row = cleanTurn(record);
    if (row.text === undefined) throw invalid(`foldTurn(${row.id}) needs the folded text on the record.`);
    await this.#run(['turns', 'chunks'], 'readwrite', async (tx) => {
      const turns = tx.objectStore('turns');
      const stored = storedRow(await turns.get(row.id));
      await allRequests((add) => {
        add(tx.objectStore('chunks').delete(chunkRange(row.id)));
        if (foldWins(stored, row)) add(turns.put(row));
      });
    });
  }

  async deleteTurn(turnId: string): Promise<void> {
    await this.#run(['turns', 'chunks'], 'readwrite', async (tx) => {
      await allRequests((add) => {
        add(tx.objectStore('chunks').delete(chunkRange(turnId)));
        add(tx.objectStore('turns').delete(turnId));
      });
    });
  }

  async sweepEnded(before: number): Promise<number> {
    if (!Number.isFinite(before)) throw invalid('sweepEnded(before) needs a finite epoch ms.');
    return this.#run(['turns', 'chunks'], 'readwrite', async (tx) => {
      const turns = tx.objectStore('turns');
      const chunks = tx.objectStore('chunks');
      // Keys only: old texts are deleted, not read.
      const ids = await turns.index('by-ended').getAllKeys(IDBKeyRange.upperBound(before, true));
      await allRequests((add) => {
        for (const id of ids) {
          add(turns.delete(id));
          add(chunks.delete(chunkRange(id)));
        }
      });
      return ids.length;
    });
  }

  async loadOutbox(): Promise<LoadResult<OutboxRecord>> {
    const [values, keys] = await this.#run(['outbox'], 'readonly', (tx) => {
      const index = tx.objectStore('outbox').index('by-order');
      return Promise.all([index.getAll(), index.getAllKeys()]);
    });
    return checkAll(outboxRecordSchema, 'outbox', values, keys);
  }

  async putOutbox(record: OutboxRecord): Promise<void> {
    const row = cleanOutbox(record);
    await this.#run(['outbox'], 'readwrite', (tx) => tx.objectStore('outbox').put(row));
  }

  async deleteOutbox(operationId: string): Promise<void> {
    await this.#run(['outbox'], 'readwrite', (tx) => tx.objectStore('outbox').delete(operationId));
  }

  async tryLease(name: string, owner: string, ttlMs: number, now: number): Promise<boolean> {
    if (!name || !owner || !(ttlMs > 0) || !Number.isFinite(ttlMs) || !Number.isFinite(now)) {
      throw invalid('tryLease needs a name, an owner, a positive ttlMs and a finite now.');
    }
    return this.#run(['leases'], 'readwrite', async (tx) => {
      const leases = tx.objectStore('leases');
      const current = checkRecord(leaseRecordSchema, await leases.get(name), 'leases', name);
      // An unreadable lease protects nothing; taking it over is the only way forward.
      const free = !current.ok || current.value.owner === owner || current.value.expiresAt <= now;
      if (free) await leases.put({ name, owner, expiresAt: now + ttlMs });
      return free;
    });
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    await this.#run(['leases'], 'readwrite', async (tx) => {
      const leases = tx.objectStore('leases');
      const current = checkRecord(leaseRecordSchema, await leases.get(name), 'leases', name);
      if (current.ok && current.value.owner === owner) await leases.delete(name);
    });
  }

  async clear(): Promise<void> {
    // Clearing the stores, not deleting the database: other tabs keep a working connection.
    await this.#run(ALL_STORES, 'readwrite', async (tx) => {
      await allRequests((add) => {
        for (const name of ALL_STORES) add(tx.objectStore(name).clear());
      });
    });
  }

  /**
   * Runs `body` in one transaction and resolves once the transaction is done. `body` may
   * await only IndexedDB requests of `tx` (anything else lets the transaction commit
   * early). A connection that turns out closed is dropped and the call retried once on a
   * fresh one: the lost transaction committed nothing, and that is how the next write
   * lands after the database was deleted underneath.
   */
  async #run<const N extends Names[], M extends IDBTransactionMode, R>(names: N, mode: M, body: (tx: Tx<N, M>) => Promise<R>): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      const db = await this.#connect();
      try {
        return await inTransaction(db, names, mode, body);
      } catch (cause) {
        const error = toStorageError(cause, mode === 'readonly' ? 'read' : 'write', this.databaseName);
        if (error.code === 'storage_closed' && attempt === 0) {
          this.#drop(db);
          continue;
        }
        if (error.code === 'storage_quota_exceeded') this.#trouble(error);
        throw error;
      }
    }
  }

  #connect(): Promise<LifelineDb> {
    if (this.#connection) return this.#connection;
    const connection: Promise<LifelineDb> = this.#openDatabase().then((db) => {
      if (this.#connection !== connection) {
        // close() (or a newer open) happened while this one was on its way.
        db.close();
        throw new StorageError('storage_closed', `The store for "${this.databaseName}" was closed while opening.`);
      }
      this.#db = db;
      return db;
    });
    this.#connection = connection;
    connection.catch(() => {
      if (this.#connection === connection) this.#connection = undefined;
    });
    return connection;
  }

  /** Forgets `db` (if it is the current connection) so the next call opens a fresh one. */
  #drop(db: LifelineDb): void {
    if (this.#db === db) {
      this.#db = undefined;
      this.#connection = undefined;
    }
    db.close();
  }

  #trouble(error: StorageError): void {
    this.onTrouble?.(error);
  }

  /**
   * Opens through the configured factory with the four idb callbacks wired by hand:
   * idb's `openDB` always uses the global `indexedDB`, and the factory is injectable.
   */
  #openDatabase(): Promise<LifelineDb> {
    const name = this.databaseName;
    const factory = this.#factory ?? (isIndexedDbAvailable() ? indexedDB : undefined);
    if (!factory) return Promise.reject(new StorageError('storage_unavailable', 'IndexedDB is not available in this environment.'));
    return new Promise<LifelineDb>((resolve, reject) => {
      let request: IDBOpenDBRequest;
      try {
        request = factory.open(name, SCHEMA_VERSION);
      } catch (cause) {
        reject(new StorageError('storage_unavailable', `IndexedDB refused to open "${name}".`, { cause }));
        return;
      }
      let settled = false;
      let blocked: { heldVersion: number; wantedVersion: number | null } | undefined;
      let migrationError: unknown;
      const timer = setTimeout(() => {
        settled = true;
        reject(
          blocked === undefined
            ? new StorageError('storage_unavailable', `Opening "${name}" took longer than ${this.#openTimeoutMs} ms.`)
            : new StorageError(
                'storage_blocked',
                `Opening "${name}" at version ${blocked.wantedVersion} is blocked: another tab holds version ${blocked.heldVersion} open and did not close it within ${this.#openTimeoutMs} ms.`,
                { details: blocked },
              ),
        );
      }, this.#openTimeoutMs);

      request.addEventListener('upgradeneeded', (event) => {
        const raw = request.transaction as IDBTransaction;
        // wrap() gives every transaction a `done` promise; an aborted upgrade must not leave it unhandled.
        const tx = wrap(raw) as unknown as UpgradeTransaction;
        tx.done.catch(() => undefined);
        try {
          upgradeDatabase(wrap(request.result) as unknown as LifelineDb, event.oldVersion, event.newVersion, tx);
        } catch (cause) {
          migrationError = cause;
          raw.abort();
        }
      });
      request.addEventListener('blocked', (event) => {
        blocked = { heldVersion: event.oldVersion, wantedVersion: event.newVersion };
      });
      request.addEventListener('success', () => {
        const raw = request.result;
        if (settled) {
          // Timed out meanwhile: the caller has its error; do not keep a connection nobody uses.
          raw.close();
          return;
        }
        settled = true;
        clearTimeout(timer);
        const db = wrap(raw) as unknown as LifelineDb;
        raw.addEventListener('versionchange', (event) => this.#onBlocking(db, event));
        raw.addEventListener('close', () => this.#onTerminated(db));
        resolve(db);
      });
      request.addEventListener('error', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const cause = migrationError ?? request.error;
        const reason = errorName(cause) ?? 'unknown error';
        const hint = reason === 'VersionError' ? `: a newer version of the app already upgraded it past version ${SCHEMA_VERSION}` : '';
        reject(new StorageError('storage_unavailable', `Could not open "${name}" (${reason})${hint}.`, { cause }));
      });
    });
  }

  /** `blocking`: a newer tab wants to upgrade (or delete) the database. Let it, and say so. */
  #onBlocking(db: LifelineDb, event: IDBVersionChangeEvent): void {
    this.#drop(db);
    const wanted = event.newVersion === null ? 'delete it' : `upgrade it to version ${event.newVersion}`;
    this.#trouble(
      new StorageError('storage_closed', `Another tab wants to ${wanted}; this tab closed its connection to "${this.databaseName}".`, {
        details: { oldVersion: event.oldVersion, newVersion: event.newVersion },
      }),
    );
  }

  /** `terminated`: the browser closed the connection (database deleted, storage cleared). */
  #onTerminated(db: LifelineDb): void {
    this.#drop(db);
    this.#trouble(
      new StorageError('storage_closed', `The browser closed "${this.databaseName}" (deleted or cleared); it is reopened on next use.`),
    );
  }
}
