/** Schema version 2: runs of plain deltas stored as their texts, read back as the same events; v1 records as before. */
import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoggedEvent } from '../../../src/protocol/schemas.js';
import { chunkWithEvents, storedChunk } from '../../../src/storage/chunk-records.js';
import { joinChunks } from '../../../src/storage/monotonic.js';
import { chunk, closeStores, makeStore, rawOpen, rawPut, row } from './indexeddb-fixtures.js';

afterEach(closeStores);

const deltas = (turnId: string, from: number, to: number): LoggedEvent[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ turnId, seq: from + i, type: 'delta', text: `w${from + i} ` }));

describe('chunk records', () => {
  it('stores a run of plain deltas as its texts and reads back the same events', () => {
    const events = deltas('t1', 3, 6);
    const stored = storedChunk({ turnId: 't1', firstSeq: 3, lastSeq: 6, events });
    expect(stored).toEqual({ turnId: 't1', firstSeq: 3, lastSeq: 6, texts: ['w3 ', 'w4 ', 'w5 ', 'w6 '] });
    expect(chunkWithEvents(stored)).toEqual({ turnId: 't1', firstSeq: 3, lastSeq: 6, events });
  });

  it('stores a run of deltas of one text part as its texts and that part, and reads back the same events', () => {
    const events = deltas('t1', 1, 3).map((event) => ({ ...event, partId: 'txt-0' }));
    const stored = storedChunk({ turnId: 't1', firstSeq: 1, lastSeq: 3, events });
    expect(stored).toEqual({ turnId: 't1', firstSeq: 1, lastSeq: 3, partId: 'txt-0', texts: ['w1 ', 'w2 ', 'w3 '] });
    expect(chunkWithEvents(stored)).toEqual({ turnId: 't1', firstSeq: 1, lastSeq: 3, events });
  });

  it.each([
    ['a turn.start', chunk('t1', 1, 3).events],
    ['a delta naming a part after one naming none', [...deltas('t1', 1, 1), { turnId: 't1', seq: 2, type: 'delta', text: 'x', partId: 'p1' }]],
    ['deltas of two parts', [{ turnId: 't1', seq: 1, type: 'delta', text: 'x', partId: 'p1' }, { turnId: 't1', seq: 2, type: 'delta', text: 'y', partId: 'p2' }]],
    ['a delta with provider metadata', [{ turnId: 't1', seq: 1, type: 'delta', text: 'x', providerMetadata: { a: 1 } }]],
    ['an unknown event', [{ turnId: 't1', seq: 1, type: 'future', text: 'x' }]],
    ['another turn’s delta', deltas('t2', 1, 1)],
    ['seqs that do not follow on', [...deltas('t1', 1, 1), ...deltas('t1', 3, 3)]],
  ] as [string, LoggedEvent[]][])('keeps the events of a chunk holding %s', (_, events) => {
    const value = { turnId: 't1', firstSeq: 1, lastSeq: events.length, events };
    expect(storedChunk(value)).toBe(value);
  });

  it('reads v1 records and text runs alike, and reports a text run that is not texts as corrupt', () => {
    const record = row('t1', { lastSeq: 6 });
    const v1 = { turnId: 't1', firstSeq: 1, lastSeq: 3, events: chunk('t1', 1, 3).events };
    const run = { turnId: 't1', firstSeq: 4, lastSeq: 6, texts: ['a', 'b', 'c'] };
    const loaded = joinChunks(record, [v1, run]);
    expect(loaded.events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(loaded.skipped).toBeUndefined();
    const bad = joinChunks(record, [v1, { ...run, texts: ['a', 7, 'c'] }]);
    expect(bad.events).toHaveLength(3);
    expect(bad.record.lastSeq).toBe(3);
    expect(bad.skipped?.[0]?.code).toBe('storage_corrupt_record');
    expect(joinChunks(record, [v1, { ...run, texts: ['a'] }]).skipped?.[0]?.code).toBe('storage_corrupt_record');
  });

  it('writes plain deltas to IndexedDB as texts and loads them back, beside a v1 record written before', async () => {
    const { store, factory } = makeStore();
    await store.write([{ record: row('t1', { lastSeq: 1 }), chunk: chunk('t1', 1, 1) }]);
    // A chunk as a version 1 build wrote it (events), put behind the store's back.
    await rawPut(factory, store.databaseName, 'chunks', { turnId: 't1', firstSeq: 2, lastSeq: 3, events: deltas('t1', 2, 3) });
    await store.write([{ record: row('t1', { lastSeq: 6 }), chunk: { turnId: 't1', firstSeq: 4, lastSeq: 6, events: deltas('t1', 4, 6) } }]);
    const db = await rawOpen(factory, store.databaseName);
    const stored = await new Promise<unknown[]>((resolve) => {
      const request = db.transaction('chunks').objectStore('chunks').getAll();
      request.onsuccess = () => resolve(request.result as unknown[]);
    });
    db.close();
    expect(stored.map((value) => Object.keys(value as object).includes('texts'))).toEqual([false, false, true]);
    const loaded = await store.loadTurn('t1');
    expect(loaded?.events).toEqual([...chunk('t1', 1, 1).events, ...deltas('t1', 2, 6)]);
  });
});
