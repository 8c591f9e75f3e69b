/**
 * The outbox schedules retries and age limits on the monotonic clock. A wall
 * clock set back an hour during a 1 s backoff must not park the message for an hour; set
 * forward, it must not expire it; a record stored before a jump is re-based, within what a
 * backoff could have asked for.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import type { OutboxRecord } from '../../../src/storage/store.js';
import { accepted, baseDeps, createFakeFetch, createFakeStorage, createRecorder, errorAnswer, until, type Responder, type TestDeps } from './helpers.js';

const T0 = Date.UTC(2030, 0, 1, 9, 0, 0);
const HOUR = 3_600_000;

let outboxes: OutboxController[] = [];
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  for (const outbox of outboxes) outbox.dispose();
  outboxes = [];
  vi.useRealTimers();
});

function setup(responder: Responder, overrides: TestDeps = {}) {
  const storage = createFakeStorage();
  const fetch = createFakeFetch(responder);
  const recorder = createRecorder();
  // One 503, then accepted; the backoff is exactly 1 s (random 0.5 of a 2 s step).
  const outbox = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit, random: () => 0.5, retry: { initialDelayMs: 2_000 }, ...overrides }));
  outboxes.push(outbox);
  return { storage, fetch, recorder, outbox };
}

/** An outbox started over storage that already holds `stored`, as a page finds it after a reload. */
async function startWithStored(stored: OutboxRecord) {
  const storage = createFakeStorage();
  storage.rows.set(stored.operationId, stored);
  const fetch = createFakeFetch(accepted);
  const recorder = createRecorder();
  const outbox = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit }));
  outboxes.push(outbox);
  await outbox.start();
  return { fetch, recorder };
}

const once503 = (): Responder => {
  let first = true;
  return (call) => (first ? ((first = false), errorAnswer(503)) : accepted(call));
};

describe('H4: outbox retries survive a wall-clock jump', () => {
  it('set back an hour during a 1 s backoff: the retry still goes after 1 s', async () => {
    const { outbox, fetch, recorder } = setup(once503());
    outbox.enqueue('conv', 'hello');
    await until(() => recorder.of('retry').length === 1, 'the first retry');
    expect(recorder.of('retry')[0]!.delayMs).toBe(1_000);
    vi.setSystemTime(Date.now() - HOUR);
    await vi.advanceTimersByTimeAsync(1_000);
    await until(() => recorder.of('accepted').length === 1, 'the retry, accepted');
    expect(fetch.calls).toHaveLength(2);
  });

  it('set forward past the age limit during a backoff: the entry is not expired by the jump', async () => {
    const { outbox, recorder } = setup(once503(), { maxAgeMs: HOUR / 2 });
    outbox.enqueue('conv', 'hello');
    await until(() => recorder.of('retry').length === 1, 'the first retry');
    vi.setSystemTime(Date.now() + HOUR);
    await vi.advanceTimersByTimeAsync(1_000);
    await until(() => recorder.of('accepted').length === 1, 'the retry, accepted');
    expect(recorder.of('failed')).toEqual([]);
  });

  it('a record stored before the wall clock went back an hour is re-based: due within the longest wait a retry may ask for', async () => {
    const stored: OutboxRecord = { operationId: 'op_stored_before_jump_01', conversationId: 'conv', content: 'x', createdAt: T0, order: T0, attempts: 1, nextAttemptAt: T0 + HOUR, state: 'queued' };
    // Longest wait: max(maxDelayMs 10 s, maxRetryAfterMs 60 s) = 60 s.
    const { fetch, recorder } = await startWithStored(stored);
    await vi.advanceTimersByTimeAsync(60_000);
    await until(() => recorder.of('accepted').length === 1, 'the stored entry, sent');
    expect(fetch.calls.map((call) => call.key)).toEqual([stored.operationId]);
  });

  it.each([
    ['never tried', { attempts: 0, state: 'queued' }],
    ['cut off mid-attempt (sending)', { attempts: 1, state: 'sending' }],
  ] as const)('an entry %s, stored by a tab before the wall clock went back an hour, goes at once (nothing asked it to wait)', async (_, at) => {
    // Written by a tab that crashed before its attempt ended; the clock then went back an hour.
    const stored: OutboxRecord = { operationId: 'op_stored_then_clock_back', conversationId: 'conv', content: 'x', createdAt: T0 + HOUR, order: T0 + HOUR, nextAttemptAt: T0 + HOUR, ...at };
    const { fetch, recorder } = await startWithStored(stored);
    await until(() => recorder.of('accepted').length === 1, 'the stored entry, sent without waiting');
    expect(fetch.calls.map((call) => call.key)).toEqual([stored.operationId]);
  });
});
