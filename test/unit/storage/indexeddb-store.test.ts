import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isStorageError, StorageError } from '../../../src/errors.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { createIndexedDbStore, type IndexedDbStore, type IndexedDbStoreOptions } from '../../../src/storage/indexeddb-store.js';
import { SCHEMA_VERSION } from '../../../src/storage/schema.js';
import type { EventChunk, OutboxRecord, TurnRecord } from '../../../src/storage/store.js';

// ------------------------------------------------------------------ fixtures

const CONV = 'conv_1';

function row(id: string, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return { id, conversationId: CONV, status: 'streaming', lastSeq: 0, createdAt: 1_000, updatedAt: 1_000, ...overrides };
}

function events(turnId: string, from: number, to: number): TurnEvent[] {
  const list: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq++) {
    list.push(
      seq === 1
        ? { turnId, seq, type: 'turn.start', messageId: 'msg_1', conversationId: CONV, createdAt: '2026-01-01T00:00:00.000Z' }
        : { turnId, seq, type: 'delta', text: `w${seq} ` },
    );
  }
  return list;
}

function chunk(turnId: string, from: number, to: number): EventChunk {
  return { turnId, firstSeq: from, lastSeq: to, events: events(turnId, from, to) };
}

function textOf(list: readonly TurnEvent[]): string {
  return list.map((event) => (event.type === 'delta' ? event.text : '')).join('');
}

function outbox(operationId: string, order: number, overrides: Partial<OutboxRecord> = {}): OutboxRecord {
  return {
    operationId,
    conversationId: CONV,
    content: `message ${order}`,
    createdAt: 1_000 + order,
    order,
    attempts: 0,
    nextAttemptAt: 0,
    state: 'queued',
    ...overrides,
  };
}

// ------------------------------------------------------------------ raw IndexedDB helpers

/** A factory that records its connections and open events; `version` forces the version asked for. */
function spyFactory(base: IDBFactory, forcedVersion?: number) {
  const connections: IDBDatabase[] = [];
  let opens = 0;
  let onBlocked: () => void = () => undefined;
  const blocked = new Promise<void>((resolve) => (onBlocked = resolve));
  const factory: IDBFactory = {
    open(name: string, version?: number) {
      opens++;
      const request = base.open(name, forcedVersion ?? version);
      request.addEventListener('success', () => connections.push(request.result));
      request.addEventListener('blocked', () => onBlocked());
      return request;
    },
    deleteDatabase: (name) => base.deleteDatabase(name),
    databases: () => base.databases(),
    cmp: (a, b) => base.cmp(a, b),
  };
  return { factory, connections, blocked, opens: () => opens };
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Opens without any versionchange handling, like an old tab running code that ignores it. */
function rawOpen(factory: IDBFactory, name: string, version?: number): Promise<IDBDatabase> {
  return request(factory.open(name, version));
}

async function rawPut(factory: IDBFactory, name: string, storeName: string, value: unknown): Promise<void> {
  const db = await rawOpen(factory, name);
  try {
    const tx = db.transaction(storeName, 'readwrite');
    tx.objectStore(storeName).put(value);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

async function rawCount(factory: IDBFactory, name: string, storeName: string): Promise<number> {
  const db = await rawOpen(factory, name);
  try {
    return await request(db.transaction(storeName).objectStore(storeName).count());
  } finally {
    db.close();
  }
}

const stores: IndexedDbStore[] = [];
function makeStore(options: IndexedDbStoreOptions = {}): { store: IndexedDbStore; factory: IDBFactory } {
  const factory = options.indexedDB ?? new IDBFactory();
  const store = createIndexedDbStore({ namespace: 'test', ...options, indexedDB: factory });
  stores.push(store);
  return { store, factory };
}

async function rejection(promise: Promise<unknown>): Promise<StorageError> {
  const error = await promise.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(isStorageError(error)).toBe(true);
  return error as StorageError;
}

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

// ------------------------------------------------------------------ tests

describe('createIndexedDbStore: round trips', () => {
  it('names one database per namespace and keeps namespaces apart', async () => {
    const factory = new IDBFactory();
    const { store: alice } = makeStore({ indexedDB: factory, namespace: 'alice' });
    const { store: bob } = makeStore({ indexedDB: factory, namespace: 'bob' });
    expect(alice.databaseName).toBe('lifeline:alice');
    await alice.write([{ record: row('t1') }]);
    expect((await alice.loadTurns()).items.map((r) => r.id)).toEqual(['t1']);
    expect((await bob.loadTurns()).items).toEqual([]);
    expect(createIndexedDbStore({ indexedDB: factory }).databaseName).toBe('lifeline:default');
  });

  it('stores a turn row and loads it back, alone and with its events', async () => {
    const { store } = makeStore();
    const record = row('t1', { messageId: 'msg_1', operationId: 'op_0123456789abcdef', lastSeq: 0 });
    await store.write([{ record: record }]);
    expect(await store.loadTurn('t1')).toEqual({ record, events: [] });
    expect(await store.loadTurn('missing')).toBeUndefined();
  });

  it('joins chunks in numeric seq order, whatever order they were written in', async () => {
    const { store } = makeStore();
    // Written out of order; [t, 2] and [t, 10] must sort as numbers, not strings.
    await store.write([{ record: row('t1', { lastSeq: 20 }), chunk: chunk('t1', 10, 20) }]);
    await store.write([{ record: row('t1', { lastSeq: 20 }), chunk: chunk('t1', 2, 9) }]);
    await store.write([{ record: row('t1', { lastSeq: 20 }), chunk: chunk('t1', 1, 1) }]);
    const loaded = await store.loadTurn('t1');
    expect(loaded?.events.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(loaded?.record.lastSeq).toBe(20);
    expect(loaded?.skipped).toBeUndefined();
  });

  it('writes the row with each chunk, and a rewritten chunk replaces the old one', async () => {
    const { store } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 3, updatedAt: 2_000 }), chunk: chunk('t1', 1, 3) }]);
    await store.write([{ record: row('t1', { lastSeq: 5, updatedAt: 3_000 }), chunk: chunk('t1', 1, 5) }]);
    const loaded = await store.loadTurn('t1');
    expect(loaded?.record).toMatchObject({ lastSeq: 5, updatedAt: 3_000 });
    expect(loaded?.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('write stores several turns in one call', async () => {
    const { store } = makeStore();
    await store.write([
      { record: row('a', { lastSeq: 2 }), chunk: chunk('a', 1, 2) },
      { record: row('b', { lastSeq: 3 }), chunk: chunk('b', 1, 3) },
      { record: row('a', { lastSeq: 4 }), chunk: chunk('a', 3, 4) },
    ]);
    expect((await store.loadTurn('a'))?.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect((await store.loadTurn('a'))?.record.lastSeq).toBe(4);
    expect((await store.loadTurn('b'))?.events).toHaveLength(3);
  });

  it('stores a big chunk as records of at most 1 024 events in one write, and loads it back whole', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 3_000 }), chunk: chunk('t1', 1, 3_000) }]);
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(3);
    const loaded = await store.loadTurn('t1');
    expect(loaded?.events.map((e) => e.seq)).toEqual(Array.from({ length: 3_000 }, (_, i) => i + 1));
    expect(loaded?.skipped).toBeUndefined();
  });

  it('rolls back the whole write when one of its values cannot be stored', async () => {
    const { store, factory } = makeStore();
    const big = chunk('t1', 1, 3_000);
    (big.events[2_500] as unknown as { extra: unknown }).extra = () => 'not clonable';
    expect((await rejection(store.write([{ record: row('t1', { lastSeq: 3_000 }), chunk: big }]))).code).toBe('storage_write_failed');
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(0);
    expect(await rawCount(factory, store.databaseName, 'turns')).toBe(0);
  });

  it('folds a turn: chunks deleted, text on the row, other turns untouched', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 300 }), chunk: chunk('t1', 1, 300) }]);
    // Same prefix: the key range of "t1" must not reach "t10".
    await store.write([{ record: row('t10', { lastSeq: 2 }), chunk: chunk('t10', 1, 2) }]);
    const text = textOf(events('t1', 1, 300));
    await store.write([{ record: row('t1', { status: 'complete', lastSeq: 300, endedAt: 5_000, text, actions: [] }) }]);
    expect(await store.loadTurn('t1')).toEqual({
      record: row('t1', { status: 'complete', lastSeq: 300, endedAt: 5_000, text, actions: [] }),
      events: [],
    });
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(1);
    expect((await store.loadTurn('t10'))?.events).toHaveLength(2);
  });

  it('deletes a turn with its chunks', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 2 }), chunk: chunk('t1', 1, 2) }]);
    await store.deleteTurn('t1');
    expect(await store.loadTurn('t1')).toBeUndefined();
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(0);
  });

  it('filters turns by conversation and by unfinished status', async () => {
    const { store } = makeStore();
    await store.write([{ record: row('c', { createdAt: 3 }) }]);
    await store.write([{ record: row('a', { createdAt: 1, status: 'reconnecting' }) }]);
    await store.write([{ record: row('b', { createdAt: 2, status: 'complete', endedAt: 9, text: '' }) }]);
    await store.write([{ record: row('d', { createdAt: 4, conversationId: 'conv_2', status: 'pending' }) }]);
    const ids = async (filter?: Parameters<IndexedDbStore['loadTurns']>[0]) => (await store.loadTurns(filter)).items.map((r) => r.id).sort();
    expect(await ids()).toEqual(['a', 'b', 'c', 'd']);
    expect(await ids({ unfinished: true })).toEqual(['a', 'c', 'd']);
    expect(await ids({ conversationId: CONV })).toEqual(['a', 'b', 'c']);
  });

  it('sweeps ended turns older than the cutoff, with their chunks, and nothing else', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('old', { status: 'failed', endedAt: 100, lastSeq: 2 }), chunk: chunk('old', 1, 2) }]);
    await store.write([{ record: row('older', { status: 'complete', endedAt: 50, text: 'x' }) }]);
    await store.write([{ record: row('recent', { status: 'complete', endedAt: 500, text: 'y' }) }]);
    await store.write([{ record: row('live', { status: 'streaming', updatedAt: 1 }) }]);
    expect(await store.sweepEnded(200)).toBe(2);
    expect((await store.loadTurns()).items.map((r) => r.id).sort()).toEqual(['live', 'recent']);
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(0);
    expect(await store.sweepEnded(200)).toBe(0);
  });

  it('keeps the outbox in order and deletes entries', async () => {
    const { store } = makeStore();
    await store.putOutbox(outbox('op_bbbbbbbbbbbbbbbb', 2));
    await store.putOutbox(outbox('op_aaaaaaaaaaaaaaaa', 1, { content: { text: 'hi', files: [1, 2] } }));
    await store.putOutbox(outbox('op_cccccccccccccccc', 3, { state: 'failed', attempts: 2 }));
    const loaded = await store.loadOutbox();
    expect(loaded.skipped).toEqual([]);
    expect(loaded.items.map((r) => r.order)).toEqual([1, 2, 3]);
    expect(loaded.items[0]?.content).toEqual({ text: 'hi', files: [1, 2] });
    await store.deleteOutbox('op_bbbbbbbbbbbbbbbb');
    expect((await store.loadOutbox()).items.map((r) => r.order)).toEqual([1, 3]);
  });

  it('loads only the known fields of a row', async () => {
    const { store } = makeStore();
    const withExtra = { ...row('t1'), headers: { authorization: 'Bearer secret' } } as TurnRecord;
    await store.write([{ record: withExtra }]);
    expect((await store.loadTurns()).items[0]).not.toHaveProperty('headers');
    expect((await store.loadTurn('t1'))?.record).not.toHaveProperty('headers');
  });

  it('clears every store of the namespace and stays usable', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 2 }), chunk: chunk('t1', 1, 2) }]);
    await store.putOutbox(outbox('op_aaaaaaaaaaaaaaaa', 1));
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 0)).toBe(true);
    await store.clear();
    for (const name of ['turns', 'chunks', 'outbox', 'leases']) expect(await rawCount(factory, store.databaseName, name)).toBe(0);
    await store.write([{ record: row('t2') }]);
    expect((await store.loadTurns()).items.map((r) => r.id)).toEqual(['t2']);
  });
});

describe('leases', () => {
  it('grants, refuses, renews, expires and releases', async () => {
    const { store } = makeStore();
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 10_000)).toBe(true);
    expect(await store.tryLease('outbox', 'tab-2', 1_000, 10_500)).toBe(false);
    // Renewal by the holder extends to 10 800 + 1 000.
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 10_800)).toBe(true);
    expect(await store.tryLease('outbox', 'tab-2', 1_000, 11_700)).toBe(false);
    expect(await store.tryLease('outbox', 'tab-2', 1_000, 11_800)).toBe(true);
    // Another lease name is independent.
    expect(await store.tryLease('sweep', 'tab-1', 1_000, 11_800)).toBe(true);
    // Only the holder can release.
    await store.releaseLease('outbox', 'tab-1');
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 11_900)).toBe(false);
    await store.releaseLease('outbox', 'tab-2');
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 11_900)).toBe(true);
  });

  it('takes over an unreadable lease record', async () => {
    const { store, factory } = makeStore();
    await store.open();
    await rawPut(factory, store.databaseName, 'leases', { name: 'outbox', owner: 42 });
    expect(await store.tryLease('outbox', 'tab-1', 1_000, 0)).toBe(true);
    expect(await store.tryLease('outbox', 'tab-2', 1_000, 1)).toBe(false);
  });
});

describe('corrupt and foreign records', () => {
  it('skips and reports bad turn rows; the rest loads', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('good1', { createdAt: 1 }) }]);
    await store.write([{ record: row('good2', { createdAt: 2 }) }]);
    await rawPut(factory, store.databaseName, 'turns', { id: 'foreign', hello: 'world' });
    await rawPut(factory, store.databaseName, 'turns', { ...row('weird'), status: 'zombie' });
    const all = await store.loadTurns();
    expect(all.items.map((r) => r.id).sort()).toEqual(['good1', 'good2']);
    expect(all.skipped.map((e) => e.code)).toEqual(['storage_corrupt_record', 'storage_corrupt_record']);
    expect(all.skipped.map((e) => (e.details as { key: string }).key).sort()).toEqual(['"foreign"', '"weird"']);
    // A status nobody knows is still found (and reported) by the unfinished query.
    const unfinished = await store.loadTurns({ unfinished: true });
    expect(unfinished.items.map((r) => r.id).sort()).toEqual(['good1', 'good2']);
    expect(unfinished.skipped).toHaveLength(1);
    expect(unfinished.skipped[0]?.details).toEqual({ store: 'turns', key: '"weird"' });
  });

  it('rejects loadTurn of a corrupt row with storage_corrupt_record', async () => {
    const { store, factory } = makeStore();
    await store.open();
    await rawPut(factory, store.databaseName, 'turns', { ...row('t1'), lastSeq: -4 });
    expect((await rejection(store.loadTurn('t1'))).code).toBe('storage_corrupt_record');
  });

  it('stops at a corrupt chunk: earlier events load, lastSeq lowered, the chunk reported', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 10 }), chunk: chunk('t1', 1, 4) }]);
    await store.write([{ record: row('t1', { lastSeq: 10 }), chunk: chunk('t1', 5, 7) }]);
    await store.write([{ record: row('t1', { lastSeq: 10 }), chunk: chunk('t1', 8, 10) }]);
    const bad = chunk('t1', 5, 7);
    await rawPut(factory, store.databaseName, 'chunks', { ...bad, events: [bad.events[0], { seq: 6, type: 'delta', text: 7 }, bad.events[2]] });
    const loaded = await store.loadTurn('t1');
    expect(loaded?.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(loaded?.record.lastSeq).toBe(4);
    expect(loaded?.skipped?.map((e) => e.code)).toEqual(['storage_corrupt_record']);
    expect(loaded?.skipped?.[0]?.details).toMatchObject({ store: 'chunks', key: '["t1",5]' });
  });

  it('reports a hole between chunks and returns the run before it', async () => {
    const { store } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 3 }), chunk: chunk('t1', 1, 3) }]);
    await store.write([{ record: row('t1', { lastSeq: 9 }), chunk: chunk('t1', 7, 9) }]);
    const loaded = await store.loadTurn('t1');
    expect(loaded?.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(loaded?.record.lastSeq).toBe(3);
    // The chunk after the hole is the one reported.
    expect(loaded?.skipped?.[0]).toMatchObject({ code: 'storage_corrupt_record', details: { store: 'chunks', key: '["t1",7]' } });
  });

  it('skips and reports bad outbox records; the rest loads in order', async () => {
    const { store, factory } = makeStore();
    await store.putOutbox(outbox('op_aaaaaaaaaaaaaaaa', 1));
    await store.putOutbox(outbox('op_cccccccccccccccc', 3));
    await rawPut(factory, store.databaseName, 'outbox', { ...outbox('op_bbbbbbbbbbbbbbbb', 2), state: 'teleported' });
    const loaded = await store.loadOutbox();
    expect(loaded.items.map((r) => r.order)).toEqual([1, 3]);
    expect(loaded.skipped).toHaveLength(1);
    expect(loaded.skipped[0]).toMatchObject({ code: 'storage_corrupt_record', details: { store: 'outbox', key: '"op_bbbbbbbbbbbbbbbb"' } });
  });
});

describe('schema and upgrades', () => {
  it('creates version 1 with its stores, key paths and indexes', async () => {
    const { store, factory } = makeStore();
    await store.open();
    expect(SCHEMA_VERSION).toBe(1);
    const db = await rawOpen(factory, store.databaseName);
    try {
      expect(db.version).toBe(1);
      expect([...db.objectStoreNames].sort()).toEqual(['chunks', 'leases', 'outbox', 'turns']);
      const tx = db.transaction(['turns', 'chunks', 'outbox', 'leases']);
      expect(tx.objectStore('turns').keyPath).toBe('id');
      expect([...tx.objectStore('turns').indexNames].sort()).toEqual(['by-conversation', 'by-ended', 'by-status']);
      expect(tx.objectStore('chunks').keyPath).toEqual(['turnId', 'firstSeq']);
      expect(tx.objectStore('outbox').keyPath).toBe('operationId');
      expect(tx.objectStore('outbox').index('by-order').keyPath).toBe('order');
      expect(tx.objectStore('leases').keyPath).toBe('name');
    } finally {
      db.close();
    }
  });

  it('keeps data across reopening and across an upgrade to a newer version', async () => {
    const factory = new IDBFactory();
    const { store } = makeStore({ indexedDB: factory });
    await store.write([{ record: row('t1', { lastSeq: 3 }), chunk: chunk('t1', 1, 3) }]);
    store.close();
    // A build with one more migration: the known ones are not re-run, data stays.
    const newer = spyFactory(factory, SCHEMA_VERSION + 1);
    const { store: upgraded } = makeStore({ indexedDB: newer.factory });
    expect((await upgraded.loadTurn('t1'))?.events).toHaveLength(3);
    expect(newer.connections[0]?.version).toBe(SCHEMA_VERSION + 1);
  });

  it('fails with storage_unavailable when a newer version already owns the database', async () => {
    const factory = new IDBFactory();
    const { store } = makeStore({ indexedDB: factory });
    (await rawOpen(factory, store.databaseName, SCHEMA_VERSION + 1)).close();
    const error = await rejection(store.open());
    expect(error.code).toBe('storage_unavailable');
    expect(error.message).toContain('VersionError');
  });

  it('times out an upgrade blocked by an old tab with storage_blocked, then recovers once it leaves', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const factory = new IDBFactory();
    const { store: previous } = makeStore({ indexedDB: factory });
    await previous.open();
    previous.close();
    const oldTab = await rawOpen(factory, previous.databaseName, SCHEMA_VERSION); // never answers versionchange
    const newer = spyFactory(factory, SCHEMA_VERSION + 1);
    const { store } = makeStore({ indexedDB: newer.factory, openTimeoutMs: 2_000 });
    const opening = rejection(store.open());
    await newer.blocked;
    await vi.advanceTimersByTimeAsync(2_000);
    const error = await opening;
    expect(error.code).toBe('storage_blocked');
    expect(error.details).toEqual({ heldVersion: SCHEMA_VERSION, wantedVersion: SCHEMA_VERSION + 1 });
    // The old tab goes away: the abandoned request completes and is closed at once,
    // and the next call opens normally.
    oldTab.close();
    await expect.poll(() => newer.connections.length).toBe(1);
    await store.write([{ record: row('t1') }]);
    expect((await store.loadTurns()).items).toHaveLength(1);
  });
});

describe('connection loss', () => {
  it('lets a newer tab upgrade: closes its connection, reports it, and does not block', async () => {
    const factory = new IDBFactory();
    const { store } = makeStore({ indexedDB: factory });
    const trouble: StorageError[] = [];
    store.onTrouble = (error) => trouble.push(error);
    await store.write([{ record: row('t1') }]);
    let blocked = false;
    const newTab = factory.open(store.databaseName, SCHEMA_VERSION + 1);
    newTab.onblocked = () => (blocked = true);
    const db = await request(newTab);
    db.close();
    expect(blocked).toBe(false);
    expect(trouble.map((e) => e.code)).toEqual(['storage_closed']);
    expect(trouble[0]?.message).toBe('Another tab upgraded or deleted the database.');
    // This build's version is now too old to reopen.
    expect((await rejection(store.write([{ record: row('t2') }]))).code).toBe('storage_unavailable');
  });

  it('reopens lazily after the browser closed the database, and the next write lands', async () => {
    const spy = spyFactory(new IDBFactory());
    const { store } = makeStore({ indexedDB: spy.factory });
    const trouble: StorageError[] = [];
    store.onTrouble = (error) => trouble.push(error);
    await store.write([{ record: row('t1') }]);
    forceCloseDatabase(spy.connections[0] as never);
    await expect.poll(() => trouble.length).toBe(1);
    expect(trouble[0]?.code).toBe('storage_closed');
    await store.write([{ record: row('t2') }]);
    expect(spy.opens()).toBe(2);
    expect((await store.loadTurns()).items.map((r) => r.id)).toEqual(['t1', 't2']);
  });

  it('retries a write once on a fresh connection when the old one is already closing', async () => {
    const spy = spyFactory(new IDBFactory());
    const { store } = makeStore({ indexedDB: spy.factory });
    await store.open();
    // Closed behind the store's back without any event: the next transaction throws InvalidStateError.
    spy.connections[0]?.close();
    await store.write([{ record: row('t1') }]);
    expect(spy.opens()).toBe(2);
    expect((await store.loadTurns()).items).toHaveLength(1);
  });

  it('lets another party delete the database, then recreates it on the next write', async () => {
    const factory = new IDBFactory();
    const { store } = makeStore({ indexedDB: factory });
    const trouble: StorageError[] = [];
    store.onTrouble = (error) => trouble.push(error);
    await store.write([{ record: row('t1') }]);
    await request(factory.deleteDatabase(store.databaseName));
    expect(trouble.map((e) => e.code)).toEqual(['storage_closed']);
    await store.write([{ record: row('t2') }]);
    expect((await store.loadTurns()).items.map((r) => r.id)).toEqual(['t2']);
  });

  it('close() lets go of the database; the next call opens a new connection', async () => {
    const spy = spyFactory(new IDBFactory());
    const { store } = makeStore({ indexedDB: spy.factory });
    await store.write([{ record: row('t1') }]);
    store.close();
    let blocked = false;
    const upgrade = spy.factory.open(store.databaseName, SCHEMA_VERSION + 1);
    upgrade.onblocked = () => (blocked = true);
    (await request(upgrade)).close();
    expect(blocked).toBe(false);
    // The store's version is now behind; deleting gets it back to a fresh start.
    await request(spy.factory.deleteDatabase(store.databaseName));
    await store.write([{ record: row('t2') }]);
    expect((await store.loadTurns()).items.map((r) => r.id)).toEqual(['t2']);
  });

  it('closes a connection that arrives after close()', async () => {
    const spy = spyFactory(new IDBFactory());
    const { store } = makeStore({ indexedDB: spy.factory });
    const opening = store.open();
    store.close();
    await opening;
    // The late connection does not hold the database: deleting it is not blocked.
    let blocked = false;
    const deletion = spy.factory.deleteDatabase(store.databaseName);
    deletion.onblocked = () => (blocked = true);
    await request(deletion);
    expect(blocked).toBe(false);
  });
});

describe('failure mapping', () => {
  it('maps a missing or throwing IndexedDB to storage_unavailable', async () => {
    const throwing: IDBFactory = {
      ...new IDBFactory(),
      open: () => {
        throw new DOMException('denied', 'SecurityError');
      },
      deleteDatabase: () => {
        throw new Error('unused');
      },
      databases: () => Promise.resolve([]),
      cmp: () => 0,
    };
    const { store } = makeStore({ indexedDB: throwing });
    expect((await rejection(store.open())).code).toBe('storage_unavailable');
    expect((await rejection(store.write([{ record: row('t1') }]))).code).toBe('storage_unavailable');

    const saved = globalThis.indexedDB;
    try {
      // @ts-expect-error: simulating an environment without IndexedDB
      delete globalThis.indexedDB;
      const bare = createIndexedDbStore();
      expect((await rejection(bare.open())).code).toBe('storage_unavailable');
    } finally {
      globalThis.indexedDB = saved;
    }
  });

  it('maps a quota abort that only rejects tx.done to storage_quota_exceeded and rolls back (the rejection is the report)', async () => {
    const { store, factory } = makeStore();
    const trouble: StorageError[] = [];
    store.onTrouble = (error) => trouble.push(error);
    await store.write([{ record: row('t1') }]);
    const put = IDBObjectStore.prototype.put;
    vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, ...args) {
      const req = put.apply(this, args);
      // The row is the last request of the write: once it succeeded every request has
      // resolved, and only tx.done can still say the commit hit the quota (as in Chromium).
      if (this.name === 'turns') {
        // `_abort` is fake-indexeddb's internal "abort with this error".
        req.addEventListener('success', () => (req.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError'));
      }
      return req;
    });
    const error = await rejection(store.write([{ record: row('t1', { lastSeq: 2 }), chunk: chunk('t1', 1, 2) }]));
    expect(error.code).toBe('storage_quota_exceeded');
    // The caller (the persistence layer) degrades with this cause: one diagnostic, not two.
    expect(trouble).toEqual([]);
    vi.restoreAllMocks();
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(0);
    expect((await store.loadTurn('t1'))?.record.lastSeq).toBe(0);
  });

  it('rolls back the whole write when a later value is refused (DataCloneError → storage_write_failed)', async () => {
    const { store, factory } = makeStore();
    const unclonable = chunk('b', 1, 1);
    (unclonable.events[0] as unknown as { extra: unknown }).extra = () => 'no';
    const error = await rejection(
      store.write([
        { record: row('a', { lastSeq: 1 }), chunk: chunk('a', 1, 1) },
        { record: row('b', { lastSeq: 1 }), chunk: unclonable },
      ]),
    );
    expect(error.code).toBe('storage_write_failed');
    expect(await rawCount(factory, store.databaseName, 'chunks')).toBe(0);
    expect(await rawCount(factory, store.databaseName, 'turns')).toBe(0);
  });

  it('maps any other write failure to storage_write_failed and a read failure to storage_unavailable', async () => {
    const { store } = makeStore();
    await store.open();
    vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(() => {
      throw new DOMException('disk on fire', 'UnknownError');
    });
    vi.spyOn(IDBObjectStore.prototype, 'getAll').mockImplementation(() => {
      throw new DOMException('disk on fire', 'UnknownError');
    });
    const write = await rejection(store.write([{ record: row('t1') }]));
    expect(write.code).toBe('storage_write_failed');
    expect(write.cause).toBeInstanceOf(DOMException);
    expect((await rejection(store.loadTurns())).code).toBe('storage_unavailable');
  });

  it('never leaves an unhandled rejection behind a failed write', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { store } = makeStore();
      await store.open();
      const put = IDBObjectStore.prototype.put;
      vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, ...args) {
        const req = put.apply(this, args);
        req.addEventListener('success', () => (req.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError'));
        return req;
      });
      await rejection(store.write([{ record: row('t1', { lastSeq: 2 }), chunk: chunk('t1', 1, 2) }]));
      await rejection(store.write([{ record: row('t1') }]));
      // Let any stray rejection surface before looking.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
