/**
 * Leader election (src/tabs/leadership.ts) with in-process stand-ins for Web Locks and
 * the storage lease, on a fake clock: no test waits for real time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { lead, type LeaseStore, type LockManagerLike } from '../../../src/tabs/leadership.js';
import { createFakeLocks, createFakeStorage, settle, until } from '../outbox/helpers.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
  vi.setSystemTime(Date.UTC(2030, 0, 1));
});
afterEach(() => void vi.useRealTimers());

/** A leader body that records its run and holds leadership until its signal aborts. */
function holder() {
  const record = { runs: 0, stepDown: undefined as AbortSignal | undefined };
  const body = (signal: AbortSignal): Promise<void> => {
    record.runs += 1;
    record.stepDown = signal;
    return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  };
  return { record, body };
}

/** A lock manager that grants every request once `grant()` is called, ignoring signals (a polyfill, or a grant that crossed an abort). */
function lateLocks(): LockManagerLike & { grant(): Promise<void> } {
  const waiting: (() => Promise<void>)[] = [];
  return {
    request: (_name, _options, callback) => new Promise((resolve) => waiting.push(() => callback().then(resolve))),
    grant: () => Promise.all(waiting.splice(0).map((run) => run())).then(() => undefined),
  };
}

const unusable = (): never => {
  throw new Error('the lease must not be used');
};
const noLease: LeaseStore = { tryLease: unusable, releaseLease: unusable };

/** Moves the fake clock in steps, letting the stores' (real) I/O answer between them, as it would in real time. */
async function elapse(ms: number, step = 500): Promise<void> {
  for (let passed = 0; passed < ms; passed += step) {
    await vi.advanceTimersByTimeAsync(Math.min(step, ms - passed));
    await settle();
  }
}

describe('Web Locks', () => {
  it('a queued request whose signal aborted never runs its callback, even when the lock comes late', async () => {
    const locks = lateLocks();
    const stop = new AbortController();
    const { record, body } = holder();
    const led = lead('x', { signal: stop.signal, locks }, body);
    stop.abort();
    await locks.grant();
    await led;
    expect(record.runs).toBe(0);
  });

  it('one leader at a time; a withdrawn waiter never leads and the next one takes over when the leader stops', async () => {
    const locks = createFakeLocks();
    const [a, b, c] = [holder(), holder(), holder()];
    const [stopA, stopB, stopC] = [new AbortController(), new AbortController(), new AbortController()];
    const ledA = lead('x', { signal: stopA.signal, locks }, a.body);
    const ledB = lead('x', { signal: stopB.signal, locks }, b.body);
    void lead('x', { signal: stopC.signal, locks }, c.body);
    await until(() => a.record.runs === 1, 'a leads');
    stopB.abort();
    await ledB;
    stopA.abort();
    await ledA;
    await until(() => c.record.runs === 1, 'c leads');
    expect([a.record.runs, b.record.runs, locks.holders]).toEqual([1, 0, 1]);
    stopC.abort();
  });

  it('a refusing lock manager (a sandboxed document) falls back to the lease; with no lease the tab leads alone', async () => {
    const refusing: LockManagerLike = { request: () => Promise.reject(new DOMException('no', 'SecurityError')) };
    const storage = createFakeStorage();
    const viaLease = holder();
    const stop = new AbortController();
    void lead('x', { signal: stop.signal, locks: refusing, lease: { store: storage } }, viaLease.body);
    await until(() => viaLease.record.runs === 1, 'leads on the lease');
    expect(storage.leases.has('x')).toBe(true);
    const alone = holder();
    void lead('y', { signal: stop.signal, locks: null }, alone.body);
    await until(() => alone.record.runs === 1, 'leads alone');
    stop.abort();
  });

  it('rejects with what the leader threw, and the lock manager is not mistaken for refusing', async () => {
    const failure = new Error('bug');
    await expect(lead('x', { signal: new AbortController().signal, locks: createFakeLocks(), lease: { store: noLease } }, () => Promise.reject(failure))).rejects.toBe(failure);
  });
});

describe('storage lease', () => {
  it('hands over when the holder stops: the next poll takes the released lease', async () => {
    const storage = createFakeStorage();
    const [a, b] = [holder(), holder()];
    const [stopA, stopB] = [new AbortController(), new AbortController()];
    const ledA = lead('x', { signal: stopA.signal, locks: null, lease: { store: storage, ttlMs: 9_000 } }, a.body);
    await until(() => a.record.runs === 1, 'a leads');
    void lead('x', { signal: stopB.signal, locks: null, lease: { store: storage, ttlMs: 9_000 } }, b.body);
    // b polls every 4.5 s; a renews every 3 s and keeps it.
    await elapse(20_000);
    expect([a.record.runs, b.record.runs, a.record.stepDown?.aborted]).toEqual([1, 0, false]);
    stopA.abort();
    await ledA;
    expect(storage.leases.size).toBe(0);
    await elapse(4_500);
    expect(b.record.runs).toBe(1);
    stopB.abort();
  });

  it('a holder whose renewals stop answering (frozen storage) steps down when its lease runs out, and another takes over', async () => {
    const storage = createFakeStorage();
    const frozen = storage.frozenLeases();
    const [a, b] = [holder(), holder()];
    const stop = new AbortController();
    void lead('x', { signal: stop.signal, locks: null, lease: { store: frozen, ttlMs: 9_000 } }, a.body);
    await until(() => a.record.runs === 1, 'a leads');
    void lead('x', { signal: stop.signal, locks: null, lease: { store: storage, ttlMs: 9_000 } }, b.body);
    await elapse(8_999);
    expect([a.record.stepDown?.aborted, b.record.runs]).toEqual([false, 0]);
    await elapse(1);
    expect(a.record.stepDown?.aborted).toBe(true);
    // b's poll at 9 s finds the lease expired.
    await until(() => b.record.runs === 1, 'b takes over');
    stop.abort();
  });

  it('a refused renewal (another tab took the expired lease) ends leadership', async () => {
    const storage = createFakeStorage();
    const a = holder();
    const stop = new AbortController();
    void lead('x', { signal: stop.signal, locks: null, lease: { store: storage, ttlMs: 9_000 } }, a.body);
    await until(() => a.record.runs === 1, 'a leads');
    storage.leases.set('x', { owner: 'someone else', expiresAt: Date.now() + 60_000 });
    await elapse(3_000);
    expect(a.record.stepDown?.aborted).toBe(true);
    stop.abort();
  });

  it('a store that cannot answer counts as held and reports the error', async () => {
    const storage = createFakeStorage();
    const broken = { ...storage, tryLease: () => Promise.reject(new Error('gone')) };
    const errors: unknown[] = [];
    const a = holder();
    const stop = new AbortController();
    void lead('x', { signal: stop.signal, locks: null, lease: { store: broken, onError: (error) => errors.push(error) } }, a.body);
    await until(() => a.record.runs === 1, 'a leads');
    expect(errors).toHaveLength(1);
    stop.abort();
  });

  it('a waiter whose signal aborts while polling never leads', async () => {
    const storage = createFakeStorage();
    storage.leases.set('x', { owner: 'someone else', expiresAt: Date.now() + 60_000 });
    const a = holder();
    const stop = new AbortController();
    const led = lead('x', { signal: stop.signal, locks: null, lease: { store: storage, ttlMs: 9_000 } }, a.body);
    await elapse(4_500);
    stop.abort();
    await led;
    storage.leases.clear();
    await elapse(60_000, 4_500);
    expect(a.record.runs).toBe(0);
  });
});
