/** The IndexedDB store over fake-indexeddb: schema and upgrades, connection loss, and how failures map to typed errors. */
import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { StorageError } from '../../../src/errors.js';
import { createIndexedDbStore } from '../../../src/storage/indexeddb-store.js';
import { SCHEMA_VERSION } from '../../../src/storage/schema.js';
import { row, chunk, spyFactory, request, rawOpen, rawCount, makeStore, rejection, closeStores } from './indexeddb-fixtures.js';

afterEach(closeStores);

describe('schema and upgrades', () => {
  it('creates version 2 (the layout of version 1; chunks may hold texts) with its stores, key paths and indexes', async () => {
    const { store, factory } = makeStore();
    await store.open();
    expect(SCHEMA_VERSION).toBe(2);
    const db = await rawOpen(factory, store.databaseName);
    try {
      expect(db.version).toBe(2);
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
