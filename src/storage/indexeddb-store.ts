/**
 * The IndexedDB `Store`. One database per namespace, every write one transaction that
 * resolves only once durable (committed), every failure a typed `StorageError`.
 */
import { createConnection, result, type IndexedDbStoreOptions } from './indexeddb-connection.js';
import { chunkWins, joinChunks, nextRow } from './monotonic.js';
import { checkAll, corruptRecord, outboxRecordSchema, turnRecordSchema } from './records.js';
import type { Stored } from './monotonic.js';
import type { LeaseRecord, StoreName } from './schema.js';
import type { EventChunk, Store, TurnRecord, TurnWrite } from './store.js';

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

export type { IndexedDbStoreOptions } from './indexeddb-connection.js';

const STORES: StoreName[] = ['turns', 'chunks', 'outbox', 'leases'];

/** Every key `[turnId, seq]` of one turn's chunks. */
const chunkRange = (turnId: string): IDBKeyRange => IDBKeyRange.bound([turnId, 0], [turnId, Infinity]);

/** Deletes a turn's chunks and (unless `keepRow`) its row; the transaction's end says whether it did. */
const remove = (tx: IDBTransaction, turnId: IDBValidKey, keepRow?: boolean): void => {
  tx.objectStore('chunks').delete(chunkRange(turnId as string));
  if (!keepRow) tx.objectStore('turns').delete(turnId);
};

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
 * Rows (the last one given for a turn wins) by the rules of `monotonic.ts`, chunks that
 * are not shorter than what their key holds, and for a fold (a row with `text`) the
 * deletion of the turn's chunks. What is stored is read in this transaction: another tab
 * may have folded these turns, got further, or stored a longer chunk under the same key.
 */
async function writeTurns(tx: IDBTransaction, items: readonly TurnWrite[]): Promise<void> {
  const turns = tx.objectStore('turns');
  const chunks = tx.objectStore('chunks');
  const rows = [...new Map(items.map(({ record }) => [record.id, record])).values()];
  const next = await Promise.all(rows.map(async (row) => nextRow(await result<Stored<TurnRecord>>(turns.get(row.id)), row)));
  const kept = new Set(next.map((row) => row?.id));
  for (const row of rows) if (row.text !== undefined) remove(tx, row.id, true);
  // put() clones its value on the main thread: one record at a time, each awaited, so a
  // burst's write is many short tasks (the stream goes on between them), not one long one.
  // A value refused synchronously (DataCloneError) throws here and aborts the transaction.
  for (const chunk of items.flatMap(({ chunk }) => (chunk ? split(chunk) : []))) {
    if (kept.has(chunk.turnId) && chunkWins(await result<Stored<EventChunk>>(chunks.get([chunk.turnId, chunk.firstSeq])), chunk)) await result(chunks.put(chunk));
  }
  for (const row of next) if (row) turns.put(row);
}

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
  const connection = createConnection(databaseName, options, (error) => store.onTrouble?.(error));
  const { run } = connection;
  const turnsTx = <R>(body: (tx: IDBTransaction) => R | Promise<R>): Promise<R> => run(['turns', 'chunks'], 'readwrite', body);

  const store: IndexedDbStore = {
    kind: 'indexeddb',
    databaseName,
    open: async () => void (await connection.connect()),
    close: connection.close,
    async loadTurns({ unfinished, conversationId } = {}) {
      const values = await run(['turns'], 'readonly', (tx) => {
        const turns = tx.objectStore('turns');
        return result<unknown[]>(
          conversationId !== undefined
            ? turns.index('by-conversation').getAll(conversationId)
            : // Above 'failed' (the last ended status in key order): every live status, and a foreign one there (reported).
              unfinished
              ? turns.index('by-status').getAll(IDBKeyRange.lowerBound('failed', true))
              : turns.getAll(),
        );
      });
      return checkAll(turnRecordSchema, 'turns', values, 'id');
    },
    async loadTurn(turnId) {
      const [row, chunks] = await run(['turns', 'chunks'], 'readonly', (tx) =>
        Promise.all([result(tx.objectStore('turns').get(turnId)), result<unknown[]>(tx.objectStore('chunks').getAll(chunkRange(turnId)))]),
      );
      if (!row) return undefined;
      const record = turnRecordSchema.safeParse(row).data;
      if (!record) throw corruptRecord('turns', turnId);
      return joinChunks(record, chunks);
    },
    write: (items) => turnsTx((tx) => writeTurns(tx, items)),
    deleteTurn: (turnId) => turnsTx((tx) => remove(tx, turnId)),
    sweepEnded: (before) =>
      turnsTx(async (tx) => {
        // Keys only: old texts are deleted, not read.
        const ids = await result<IDBValidKey[]>(tx.objectStore('turns').index('by-ended').getAllKeys(IDBKeyRange.upperBound(before, true)));
        for (const id of ids) remove(tx, id);
        return ids.length;
      }),
    async loadOutbox() {
      const values = await run(['outbox'], 'readonly', (tx) => result<unknown[]>(tx.objectStore('outbox').index('by-order').getAll()));
      return checkAll(outboxRecordSchema, 'outbox', values, 'operationId');
    },
    putOutbox: (record) => run(['outbox'], 'readwrite', (tx) => void tx.objectStore('outbox').put(record)),
    deleteOutbox: (operationId) => run(['outbox'], 'readwrite', (tx) => void tx.objectStore('outbox').delete(operationId)),
    tryLease: (name, owner, ttlMs, now) =>
      run(['leases'], 'readwrite', async (tx) => {
        const leases = tx.objectStore('leases');
        // Free when unheld, expired, unreadable, or already `owner`'s.
        const lease = await result<Stored<LeaseRecord>>(leases.get(name));
        const free = lease?.owner == owner || !(lease?.expiresAt! > now);
        if (free) leases.put({ name, owner, expiresAt: now + ttlMs } satisfies LeaseRecord);
        return free;
      }),
    releaseLease: (name, owner) =>
      run(['leases'], 'readwrite', async (tx) => {
        const leases = tx.objectStore('leases');
        if ((await result<Stored<LeaseRecord>>(leases.get(name)))?.owner == owner) leases.delete(name);
      }),
    async clear() {
      // Clearing the stores, not deleting the database: other tabs keep a working connection.
      await run(STORES, 'readwrite', (tx) => STORES.forEach((name) => tx.objectStore(name).clear()));
    },
  };
  return store;
}
