/** The IndexedDB store over fake-indexeddb: round trips, leases, and corrupt or foreign records. */
import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it } from 'vitest';
import { IDBFactory } from 'fake-indexeddb';
import { createIndexedDbStore, type IndexedDbStore } from '../../../src/storage/indexeddb-store.js';
import type { TurnRecord } from '../../../src/storage/store.js';
import { CONV, row, events, chunk, textOf, outbox, rawPut, rawCount, makeStore, rejection, closeStores } from './indexeddb-fixtures.js';

afterEach(closeStores);

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
