/**
 * The write buffer's runner (its table is checked in test/unit/scripts/machine-tables.test.ts):
 * the timer an event armed during a write is the one its rest waits for, one write is in
 * flight, and a stopped buffer takes nothing more.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { realTimers } from '../../../src/ports/timers.js';
import type { LoggedEvent } from '../../../src/protocol/schemas.js';
import type { GuardedStore } from '../../../src/storage/guarded-store.js';
import type { Store, TurnWrite } from '../../../src/storage/store.js';
import { createTurnRows } from '../../../src/storage/turn-rows.js';
import { createWriteBuffer } from '../../../src/storage/write-buffer.js';

afterEach(() => void vi.useRealTimers());

/** A store queue whose writes stay open until the test ends them; `writes` holds each write's seqs. */
function gatedStore() {
  const writes: number[][] = [];
  const open: (() => void)[] = [];
  let chain: Promise<unknown> = Promise.resolve();
  const target = {
    write: (items: TurnWrite[]) => {
      writes.push(items.flatMap(({ chunk }) => chunk!.events.map((event) => event.seq)));
      return new Promise<void>((resolve) => open.push(resolve));
    },
  } as unknown as Store;
  const store = {
    serial: (operation: (store: Store) => Promise<unknown>) => (chain = chain.then(() => operation(target))),
    idle: () => chain.then(() => undefined),
  } as unknown as GuardedStore;
  return { store, writes, end: () => open.shift()!() };
}

function bufferOver(store: GuardedStore) {
  const rows = createTurnRows(() => 0, () => {});
  rows.track('turn_a', () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 0 }));
  const buffer = createWriteBuffer({ flushMs: 16, flushEvents: 4, maxWriteEvents: 8, rows, store, timers: realTimers });
  let seq = 0;
  const append = (count: number) => {
    for (let i = 0; i < count; i++) buffer.append('turn_a', { turnId: 'turn_a', seq: ++seq, type: 'delta', text: 'x' } as LoggedEvent);
  };
  return { buffer, append };
}

describe('the write buffer', () => {
  it('writes a rest buffered during a write when the timer its first event armed fires, one write at a time', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { store, writes, end } = gatedStore();
    const { append } = bufferOver(store);
    append(4);
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual([[1, 2, 3, 4]]);
    await vi.advanceTimersByTimeAsync(5);
    append(1);
    await vi.advanceTimersByTimeAsync(5);
    end();
    // The timer armed at 5 ms fires at 21 ms, not 16 ms after the write ended.
    await vi.advanceTimersByTimeAsync(10);
    expect(writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(writes).toEqual([[1, 2, 3, 4], [5]]);
    // A full flush buffered while that write is open waits for it: still one write in flight.
    append(8);
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toHaveLength(2);
    end();
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual([[1, 2, 3, 4], [5], [6, 7, 8, 9, 10, 11, 12, 13]]);
  });

  it('takes nothing once stopped: a flush then has nothing to write', async () => {
    const { store, writes, end } = gatedStore();
    const { buffer, append } = bufferOver(store);
    append(2);
    const flushed = buffer.flush();
    await expect.poll(() => writes).toHaveLength(1);
    end();
    await flushed;
    buffer.stop();
    append(5);
    await buffer.flush();
    expect(writes).toEqual([[1, 2]]);
  });
});
