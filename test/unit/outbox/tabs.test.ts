/**
 * Several "tabs" (outboxes) over one storage, one lock manager and one broadcast channel,
 * as pages of one browser context share them.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StorageError } from '../../../src/errors.js';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import type { OutboxEntry } from '../../../src/types.js';
import {
  accepted,
  baseDeps,
  channelFactory,
  createFakeFetch,
  createFakeLocks,
  createFakeStorage,
  createRecorder,
  hang,
  until,
  type Call,
  type FakeStorage,
  type Responder,
  type TestDeps,
} from './helpers.js';

let outboxes: OutboxController[] = [];
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  vi.setSystemTime(Date.UTC(2030, 0, 1));
});
afterEach(() => {
  for (const outbox of outboxes) outbox.dispose();
  outboxes = [];
  vi.useRealTimers();
});

function browser(storage: FakeStorage = createFakeStorage()) {
  const locks = createFakeLocks();
  const channel = channelFactory();
  const calls: Call[] = [];
  let responder: Responder = hang;
  const tab = (name: string, overrides: TestDeps = {}) => {
    const fetch = createFakeFetch((call) => {
      calls.push(call);
      return responder(call);
    }, name);
    const recorder = createRecorder();
    const acceptedEntries: OutboxEntry[] = [];
    const outbox = createOutbox(
      baseDeps({ storage, fetch, emit: recorder.emit, locks, channel, onAccepted: (entry) => void acceptedEntries.push(entry), ...overrides }),
    );
    outboxes.push(outbox);
    // As the client does at creation: learn what storage holds (and so the highest order).
    void outbox.start();
    const state = (id: string) => outbox.entries.getSnapshot().find((e) => e.operationId === id)?.state;
    return { outbox, recorder, acceptedEntries, state };
  };
  return {
    storage,
    calls,
    tab,
    answer(next: Responder) {
      responder = next;
    },
  };
}

describe('one sender per browser', () => {
  it('with Web Locks only the holder posts; when it closes mid-flight the other re-sends with the same keys', async () => {
    const context = browser();
    const a = context.tab('a');
    const b = context.tab('b');
    const a1 = a.outbox.enqueue('conv-a', 'from a');
    await until(() => context.calls.length === 1, 'a posts its entry');
    const b1 = b.outbox.enqueue('conv-b', 'from b');
    // b's entry reaches a through storage + the channel; a sends it, b waits for the lock.
    await until(() => context.calls.length === 2, 'a posts b’s entry');
    expect(context.calls.map((c) => [c.tab, c.key])).toEqual([
      ['a', a1.operationId],
      ['a', b1.operationId],
    ]);
    // b sees a's entry and its state through storage.
    await until(() => b.state(a1.operationId) === 'sending' && b.state(b1.operationId) === 'sending', 'b’s view');

    // a's tab closes mid-flight: its lock goes, b takes over.
    context.answer(accepted);
    a.outbox.dispose();
    await until(() => b.acceptedEntries.length === 2, 'b sends both');
    const byB = context.calls.filter((c) => c.tab === 'b').map((c) => c.key);
    expect(byB.sort()).toEqual([a1.operationId, b1.operationId].sort());
    expect(b.recorder.of('submit').map((d) => d.attempt)).toEqual([2, 2]);
  });

  it('a non-sending tab sees acceptance through the channel and gets onAccepted', async () => {
    const context = browser();
    context.answer(accepted);
    const a = context.tab('a');
    const b = context.tab('b');
    const first = a.outbox.enqueue('conv', 'one');
    await until(() => a.acceptedEntries.length === 1, 'a accepted');
    const second = b.outbox.enqueue('conv', 'two');
    await until(() => b.acceptedEntries.some((e) => e.operationId === second.operationId), 'b learns of acceptance');
    expect(b.acceptedEntries.find((e) => e.operationId === second.operationId)?.turnId).toEqual(expect.any(String));
    expect(new Set(context.calls.map((c) => c.key)).size).toBe(context.calls.length);
    expect(first.operationId).not.toBe(second.operationId);
  });

  it('a discard in another tab aborts the sender’s request and the entry stays gone', async () => {
    const context = browser();
    const a = context.tab('a');
    const b = context.tab('b');
    const { operationId } = a.outbox.enqueue('conv', 'x');
    await until(() => context.calls.length === 1, 'in flight');
    await until(() => b.state(operationId) === 'sending', 'b sees it');
    await b.outbox.discard(operationId);
    await until(() => context.calls[0]?.signal.aborted === true, 'a aborted');
    await until(() => a.state(operationId) === undefined, 'gone in a');
    expect(context.storage.rows.has(operationId)).toBe(false);
    expect(a.recorder.of('retry')).toHaveLength(0);
  });
});

describe('lease fallback (no Web Locks)', () => {
  it('a frozen holder keeps others out until its lease expires, then one takes over with the same key', async () => {
    const storage = createFakeStorage();
    const context = browser(storage);
    const a = context.tab('a', { locks: null, storage: storage.frozenLeases(), leaseTtlMs: 10_000 });
    const b = context.tab('b', { locks: null, leaseTtlMs: 10_000 });
    const entry = a.outbox.enqueue('conv', 'x');
    await until(() => context.calls.length === 1, 'a posts');
    await until(() => b.state(entry.operationId) === 'sending', 'b has read a’s entry');
    b.outbox.enqueue('conv', 'y');
    // b polls the lease every 5 s; a's lease runs until 10 s, so b takes over at its poll after that (15 s, plus a tick of the timers port).
    await vi.advanceTimersByTimeAsync(9_000);
    expect(context.calls.map((c) => c.tab)).toEqual(['a']);
    context.answer(accepted);
    await vi.advanceTimersByTimeAsync(7_000);
    await until(() => b.acceptedEntries.length === 2, 'b sends both, in order');
    const byB = context.calls.filter((c) => c.tab === 'b');
    expect(byB.map((c) => c.body.content)).toEqual(['x', 'y']);
    expect(byB[0]?.key).toBe(entry.operationId);
  });

  it('releases the lease when idle', async () => {
    const storage = createFakeStorage();
    const context = browser(storage);
    context.answer(accepted);
    const a = context.tab('a', { locks: null, acceptedRetentionMs: 0 });
    const { operationId } = a.outbox.enqueue('conv', 'x');
    await until(() => storage.leases.size === 1, 'lease taken');
    await until(() => a.acceptedEntries.length === 1 && storage.leases.size === 0, 'idle and released');
    // The accepted entry goes once its retention (0 ms) has run.
    await vi.advanceTimersByTimeAsync(0);
    await until(() => !storage.rows.has(operationId), 'accepted entry deleted');
  });

  it('a store that cannot answer lease calls does not stop sending (reported)', async () => {
    const storage = createFakeStorage();
    storage.tryLease = () => Promise.reject(new StorageError('storage_unavailable', 'gone'));
    const context = browser(storage);
    context.answer(accepted);
    const a = context.tab('a', { locks: null });
    a.outbox.enqueue('conv', 'x');
    await until(() => a.acceptedEntries.length === 1, 'sent');
    expect(a.recorder.of('storage-error')[0]?.error.code).toBe('storage_unavailable');
  });
});
