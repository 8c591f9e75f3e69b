/**
 * Rows only move forward, in every store: two tabs on one database follow the same turn,
 * one folds it while the other is still appending (the soak's "hole in the stored events:
 * seq 1 to 262 missing"). A late append or row write never un-folds a row, never moves
 * its lastSeq back, and is dropped rather than rejected; a chunk never replaces a longer
 * one stored under the same key.
 */
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { createIndexedDbStore } from '../../../src/storage/indexeddb-store.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { EventChunk, Store, TurnRecord } from '../../../src/storage/store.js';

const TURN = 'turn_shared';

function row(overrides: Partial<TurnRecord> = {}): TurnRecord {
  return { id: TURN, conversationId: 'conv_1', status: 'streaming', lastSeq: 0, createdAt: 1_000, updatedAt: 1_000, ...overrides };
}

function chunk(from: number, to: number): EventChunk {
  const events: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq++) events.push({ turnId: TURN, seq, type: 'delta', text: `w${seq} ` });
  return { turnId: TURN, firstSeq: from, lastSeq: to, events };
}

function textTo(lastSeq: number): string {
  return chunk(1, lastSeq).events.map((event) => (event.type === 'delta' ? event.text : '')).join('');
}

function folded(lastSeq: number, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return row({ status: 'complete', lastSeq, text: textTo(lastSeq), actions: [], endedAt: 9_000, updatedAt: 9_000, ...overrides });
}

const opened: Store[] = [];
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

/** Two "tabs" on one database, and a third store reading what a reload would find. */
const kinds: [string, () => { tabA: Store; tabB: Store; reload: () => Store }][] = [
  [
    'indexeddb (two connections to one database)',
    () => {
      const indexedDB = new IDBFactory();
      const make = (): Store => {
        const store = createIndexedDbStore({ namespace: 'tabs', indexedDB });
        opened.push(store);
        return store;
      };
      return { tabA: make(), tabB: make(), reload: make };
    },
  ],
  [
    'memory',
    () => {
      const store = createMemoryStore();
      return { tabA: store, tabB: store, reload: () => store };
    },
  ],
];

describe.each(kinds)('monotonic turn rows: %s', (_name, setup) => {
  it('drops a late append after another tab folded the turn: the fold stays, no hole on load', async () => {
    const { tabA, tabB, reload } = setup();
    await tabA.write([{ record: row({ lastSeq: 262 }), chunk: chunk(1, 262) }]);
    await tabB.write([{ record: row({ lastSeq: 262 }), chunk: chunk(1, 262) }]);
    await tabA.write([{ record: folded(300) }]);
    // Tab B is behind: its next flush of the same turn lands after the fold.
    await tabB.write([{ record: row({ lastSeq: 290 }), chunk: chunk(263, 290) }]);
    await tabB.write([{ record: row({ lastSeq: 300 }), chunk: chunk(291, 300) }]);

    const loaded = await reload().loadTurn(TURN);
    expect(loaded).toEqual({ record: folded(300), events: [] });
    expect(loaded?.skipped).toBeUndefined();
    expect((await reload().loadTurns({ unfinished: true })).items).toEqual([]);
  });

  it('a shorter chunk under the same key does not replace a longer one (the soak\'s "seq 6 to 9 missing")', async () => {
    const { tabA, tabB, reload } = setup();
    // Both tabs follow from seq 1 and cut their flushes at different seqs; tab B then closes.
    await tabA.write([{ record: row({ lastSeq: 9 }), chunk: chunk(1, 9) }]);
    await tabA.write([{ record: row({ lastSeq: 20 }), chunk: chunk(10, 20) }]);
    await tabB.write([{ record: row({ lastSeq: 5 }), chunk: chunk(1, 5) }]);
    const loaded = await reload().loadTurn(TURN);
    expect(loaded?.skipped).toBeUndefined();
    expect(loaded?.events.map((event) => event.seq)).toEqual(chunk(1, 20).events.map((event) => event.seq));
    expect(loaded?.record.lastSeq).toBe(20);
  });

  it('a late row write (bare row) does not un-fold the turn', async () => {
    const { tabA, tabB, reload } = setup();
    await tabA.write([{ record: folded(5) }]);
    await tabB.write([{ record: row({ lastSeq: 3, status: 'reconnecting' }) }]);
    expect(await reload().loadTurn(TURN)).toEqual({ record: folded(5), events: [] });
  });

  it('drops only the folded turn of a batch; the others are written', async () => {
    const { tabA, tabB, reload } = setup();
    await tabA.write([{ record: folded(2) }]);
    const other: EventChunk = { turnId: 'turn_other', firstSeq: 1, lastSeq: 1, events: [{ turnId: 'turn_other', seq: 1, type: 'delta', text: 'x' }] };
    await tabB.write([
      { record: row({ lastSeq: 4 }), chunk: chunk(3, 4) },
      { record: { ...row({ lastSeq: 1 }), id: 'turn_other' }, chunk: other },
    ]);
    expect((await reload().loadTurn(TURN))?.record).toEqual(folded(2));
    expect((await reload().loadTurn('turn_other'))?.events).toEqual(other.events);
  });

  it('never moves a row lastSeq back: the tab that got further keeps its claim', async () => {
    const { tabA, tabB, reload } = setup();
    await tabA.write([{ record: row({ lastSeq: 10 }), chunk: chunk(1, 10) }]);
    await tabB.write([{ record: row({ lastSeq: 6, updatedAt: 2_000 }), chunk: chunk(1, 6) }]);
    await tabB.write([{ record: row({ lastSeq: 0, status: 'reconnecting', updatedAt: 3_000 }) }]);
    const [stored] = (await reload().loadTurns()).items;
    expect(stored).toEqual(row({ lastSeq: 10, status: 'reconnecting', updatedAt: 3_000 }));
    expect((await reload().loadTurn(TURN))?.events.map((event) => event.seq)).toEqual(chunk(1, 10).events.map((event) => event.seq));
  });

  it('a fold that got less far does not replace one that got further; an equal or further one does', async () => {
    const { tabA, tabB, reload } = setup();
    await tabA.write([{ record: folded(8) }]);
    await tabB.write([{ record: folded(5, { status: 'failed' }) }]);
    expect((await reload().loadTurn(TURN))?.record).toEqual(folded(8));
    await tabB.write([{ record: folded(8, { updatedAt: 9_500 }) }]);
    expect((await reload().loadTurn(TURN))?.record).toEqual(folded(8, { updatedAt: 9_500 }));
  });

  it('an unfolded ended row is not final: a revived turn writes past it', async () => {
    const { tabA, reload } = setup();
    await tabA.write([{ record: row({ lastSeq: 3, status: 'failed' }), chunk: chunk(1, 3) }]);
    await tabA.write([{ record: row({ lastSeq: 5, status: 'streaming' }), chunk: chunk(4, 5) }]);
    expect((await reload().loadTurns({ unfinished: true })).items.map((item) => item.status)).toEqual(['streaming']);
  });
});
