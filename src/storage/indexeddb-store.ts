/**
 * The IndexedDB `Store` (via idb). One database per namespace, every write one
 * transaction that resolves only once durable (`tx.done`), every failure a typed
 * `StorageError`.
 */
import { platformIndexedDb } from '../ports/indexeddb.js';
import { createConnection, type IndexedDbStoreOptions, type Names, type Tx } from './indexeddb-connection.js';
import { storedChunk, type StoredChunk } from './chunk-records.js';
import { chunkWins, joinChunks, nextRow } from './monotonic.js';
import { checkAll, corruptRecord, outboxRecordSchema, turnRecordSchema } from './records.js';
import type { EventChunk, Store, TurnWrite } from './store.js';

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
  return !!platformIndexedDb();
}

export type { IndexedDbStoreOptions } from './indexeddb-connection.js';

/** A read-write transaction on turns' rows and chunks. */
type TurnsTx = Tx<['turns', 'chunks'], 'readwrite'>;

const STORES: Names[] = ['turns', 'chunks', 'outbox', 'leases'];

/** Every key `[turnId, seq]` of one turn's chunks. */
const chunkRange = (turnId: string): IDBKeyRange => IDBKeyRange.bound([turnId, 0], [turnId, Infinity]);

/** The requests deleting a turn's chunks and (unless `keepRow`) its row. */
const remove = (tx: TurnsTx, turnId: string, keepRow?: boolean): Promise<unknown>[] => [
  tx.objectStore('chunks').delete(chunkRange(turnId)),
  ...(keepRow ? [] : [tx.objectStore('turns').delete(turnId)]),
];

/** Most events in one stored chunk record (about 2–3 ms of structured cloning); a bigger chunk is stored as consecutive records. */
const RECORD_EVENTS = 1024;

/** Cuts a chunk (consecutive seqs) into records of at most {@link RECORD_EVENTS} events. */
const split = ({ turnId, firstSeq, events }: EventChunk): StoredChunk[] => {
  const records: StoredChunk[] = [];
  for (let at = 0; at < events.length; at += RECORD_EVENTS) {
    const part = events.slice(at, at + RECORD_EVENTS);
    records.push(storedChunk({ turnId, firstSeq: firstSeq + at, lastSeq: firstSeq + at + part.length - 1, events: part }));
  }
  return records;
};

/**
 * Rows (the last one given for a turn wins) by the rules of `monotonic.ts`, chunks that
 * are not shorter than what their key holds, and for a fold (a row with `text`) the
 * deletion of the turn's chunks. What is stored is read in this transaction: another tab
 * may have folded these turns, got further, or stored a longer chunk under the same key.
 */
async function writeTurns(tx: TurnsTx, items: readonly TurnWrite[]): Promise<void> {
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
  const turnsTx = <R>(body: (tx: TurnsTx) => Promise<R>): Promise<R> => run(['turns', 'chunks'], 'readwrite', body);

  const store: IndexedDbStore = {
    kind: 'indexeddb',
    databaseName,
    open: async () => void (await connection.connect()),
    close: connection.close,
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
    write: (items) => turnsTx((tx) => writeTurns(tx, items)),
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
