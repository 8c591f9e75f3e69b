/**
 * The client's persistence, how it writes: one chunk per turn per flush for every turn in one call, and a burst in capped writes, one in flight.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import { createPersistence } from '../../../src/storage/persistence.js';
import type { Store } from '../../../src/storage/store.js';
import { range } from './support/follow.js';
import { writeKind, recordingStore, delta, persistenceOver, runCleanups } from './support/persistence-rig.js';

afterEach(runCleanups);

describe('batched writes', () => {
  it('writes one chunk per turn per flush, all turns in one write call, after flushMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const { store, inner, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    for (let seq = 1; seq <= 10; seq++) {
      persistence.append('turn_a', delta('turn_a', seq, `a${seq}`));
      persistence.append('turn_b', delta('turn_b', seq, `b${seq}`));
    }
    await vi.advanceTimersByTimeAsync(15);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await persistence.flush();
    expect(calls).toEqual([{ method: 'chunks', items: 2 }]);
    const loaded = await inner.loadTurn('turn_a');
    expect(loaded?.events.map((event) => event.seq)).toEqual(range(10));
    expect(loaded?.record.lastSeq).toBe(10);
  });

  it('flushes at once when flushEvents are buffered, without waiting for the timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const { store, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    for (let seq = 1; seq <= 256; seq++) persistence.append('turn_a', delta('turn_a', seq, 'x'));
    await expect.poll(() => calls).toEqual([{ method: 'chunks', items: 1 }]);
  });

  it('writes one contiguous chunk per run of seqs, all in one write call', async () => {
    const { store, inner, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    persistence.append('turn_a', delta('turn_a', 1, 'a'));
    persistence.append('turn_a', delta('turn_a', 2, 'b'));
    // seq 3 was an unknown event type: skipped, so the run splits.
    persistence.append('turn_a', delta('turn_a', 4, 'd'));
    persistence.append('turn_b', delta('turn_b', 1, 'x'));
    await persistence.flush();
    expect(calls).toEqual([{ method: 'chunks', items: 3 }]);
    // Stored chunks are contiguous; a load stops at the hole so the client refetches from there.
    expect((await inner.loadTurn('turn_a'))?.events.map((event) => event.seq)).toEqual([1, 2]);
  });
});

describe('bursts: capped writes, one in flight', () => {
  /** A store whose batch writes stay open until the test completes them, like slow IndexedDB transactions. */
  function gatedStore() {
    const inner = createMemoryStore();
    const writes: number[] = [];
    const open: (() => void)[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const store: Store = {
      ...inner,
      kind: 'gated',
      // Only chunk writes are gated (and counted); rows and folds go straight through.
      write: async (items) => {
        if (writeKind(items) != 'chunks') return inner.write(items);
        writes.push(items.reduce((sum, item) => sum + item.chunk!.events.length, 0));
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise<void>((resolve) => open.push(resolve));
        inFlight -= 1;
        await inner.write(items);
      },
    };
    return { store, inner, writes, open, maxInFlight: () => maxInFlight };
  }

  /** One macrotask: what separates two network reads. */
  const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('writes a 100 000-event burst in capped transactions, one at a time, and every event lands in order', async () => {
    const gated = gatedStore();
    const persistence = persistenceOver(gated.store);
    await persistence.open();
    const total = 100_000;
    const perRead = 700;
    let reads = 0;
    for (let first = 1; first <= total; first += perRead) {
      for (let seq = first; seq < first + perRead && seq <= total; seq++) persistence.append('turn_a', delta('turn_a', seq, 'x'));
      reads += 1;
      // Storage is slower than the stream: one transaction completes every ten reads, so a backlog builds up.
      if (reads % 10 === 0) gated.open.shift()?.();
      await nextTask();
    }
    const flushed = persistence.flush();
    let settled = false;
    void flushed.then(() => (settled = true));
    while (!settled) {
      gated.open.shift()?.();
      await nextTask();
    }
    const cap = 256 * 16;
    expect(gated.writes.reduce((sum, events) => sum + events, 0)).toBe(total);
    expect(Math.max(...gated.writes)).toBeLessThanOrEqual(cap);
    expect(gated.maxInFlight()).toBe(1);
    // Under a backlog every write is full: about total / cap transactions, not one per flushEvents.
    expect(gated.writes.length).toBeLessThanOrEqual(Math.ceil(total / cap) + 12);
    expect(gated.writes.filter((events) => events === cap).length).toBeGreaterThanOrEqual(Math.floor(total / cap) - 1);
    const loaded = await gated.inner.loadTurn('turn_a');
    expect(loaded?.events.length).toBe(total);
    expect(loaded?.events.every((event, index) => event.seq === index + 1)).toBe(true);
    expect(loaded?.record.lastSeq).toBe(total);
  });

  it('serves every turn under a backlog; an ended turn writes its rest in capped writes, then folds', async () => {
    const gated = gatedStore();
    const persistence = createPersistence({
      store: gated.store,
      flushMs: 16,
      flushEvents: 10,
      maxWriteEvents: 50,
      retentionMs: 1000,
      now: Date.now,
      emit: () => undefined,
    });
    for (const id of ['turn_a', 'turn_b']) persistence.track(id, () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 1 }));
    await persistence.open();
    for (let seq = 1; seq <= 200; seq++) persistence.append('turn_a', delta('turn_a', seq, 'a'));
    for (let seq = 1; seq <= 20; seq++) persistence.append('turn_b', delta('turn_b', seq, 'b'));
    // The first write took 50 of turn_a; turn_b goes next, before the rest of turn_a's backlog.
    await expect.poll(() => gated.writes).toEqual([50]);
    gated.open.shift()?.();
    await expect.poll(() => gated.writes).toEqual([50, 50]);
    expect((await gated.inner.loadTurn('turn_b'))?.events ?? []).toEqual([]);
    const ended = persistence.end('turn_a', { status: 'complete', text: 'a'.repeat(200), actions: [], parts: [{ at: 0 }], lastSeq: 200 });
    const flushed = persistence.flush();
    let settled = false;
    void Promise.all([ended, flushed]).then(() => (settled = true));
    while (!settled) {
      gated.open.shift()?.();
      await nextTask();
    }
    // turn_a's other 120 events went out in writes of at most 50, then the fold deleted its chunks.
    expect(gated.writes).toEqual([50, 50, 50, 50, 20]);
    expect((await gated.inner.loadTurn('turn_b'))?.events.map((event) => event.seq)).toEqual(range(20));
    const folded = await gated.inner.loadTurn('turn_a');
    expect(folded?.record).toEqual(expect.objectContaining({ status: 'complete', lastSeq: 200, text: 'a'.repeat(200) }));
    expect(folded?.events).toEqual([]);
  });
});
