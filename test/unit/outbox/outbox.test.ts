import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createOutbox, type OutboxController, type OutboxDeps } from '../../../src/outbox/outbox.js';
import type { OutboxEntry } from '../../../src/types.js';
import {
  accepted,
  baseDeps,
  channelFactory,
  createFakeFetch,
  createFakeNetwork,
  createFakeStorage,
  createRecorder,
  errorAnswer,
  hang,
  settle,
  until,
  type Call,
  type Responder,
  type TestDeps,
} from './helpers.js';

const T0 = Date.UTC(2030, 0, 1, 9, 0, 0);

let outboxes: OutboxController[] = [];
afterEach(() => {
  for (const outbox of outboxes) outbox.dispose();
  outboxes = [];
  vi.useRealTimers();
});

function setup(responder: Responder, overrides: TestDeps = {}) {
  const storage = createFakeStorage();
  const fetch = createFakeFetch(responder);
  const recorder = createRecorder();
  const acceptedEntries: OutboxEntry[] = [];
  const outbox = createOutbox(
    baseDeps({
      storage,
      fetch,
      emit: recorder.emit,
      onAccepted: (entry) => void acceptedEntries.push(entry),
      ...overrides,
    }),
  );
  outboxes.push(outbox);
  const entry = (id: string) => outbox.entries.getSnapshot().find((e) => e.operationId === id);
  return { storage, fetch, recorder, outbox, acceptedEntries, entry };
}

describe('outbox (fake timers)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    vi.setSystemTime(T0);
  });

  it('shows the entry as queued at once and writes it to storage before the first POST', async () => {
    const seenInStorage: unknown[] = [];
    const { outbox, storage, fetch } = setup((call) => {
      seenInStorage.push(storage.rows.get(call.key)?.content);
      return accepted(call);
    });
    const { operationId, written } = outbox.enqueue('conv', 'hello');
    expect(operationId).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(outbox.entries.getSnapshot()).toMatchObject([{ operationId, state: 'queued', conversationId: 'conv', content: 'hello', attempts: 0 }]);
    expect(fetch.calls).toHaveLength(0);
    await written;
    await until(() => fetch.calls.length === 1, 'the POST');
    expect(seenInStorage).toEqual(['hello']);
    const call = fetch.calls[0] as Call;
    expect(call.url).toBe('http://lifeline.test/api/conversations/conv/messages');
    expect(call.key).toBe(operationId);
    expect(call.headers.get('content-type')).toBe('application/json');
    expect(call.body).toEqual({ content: 'hello' });
  });

  it('accepts: state, ids, diagnostics, onAccepted, then deletes the entry after the retention', async () => {
    const { outbox, storage, fetch, recorder, acceptedEntries, entry } = setup(accepted, { acceptedRetentionMs: 5_000 });
    const { operationId } = outbox.enqueue('conv', { text: 'hi', attachments: [] });
    await until(() => acceptedEntries.length === 1, 'onAccepted');
    expect(entry(operationId)).toMatchObject({ state: 'accepted', turnId: expect.any(String), messageId: expect.any(String), acceptedAt: T0 });
    expect(storage.rows.get(operationId)?.state).toBe('accepted');
    expect(recorder.of('submit')).toMatchObject([{ operationId, conversationId: 'conv', attempt: 1 }]);
    expect(recorder.of('accepted')).toMatchObject([{ operationId, turnId: entry(operationId)?.turnId, replayed: false }]);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(entry(operationId)?.state).toBe('accepted');
    await vi.advanceTimersByTimeAsync(1);
    await until(() => !storage.rows.has(operationId) && entry(operationId) === undefined, 'deletion');
    expect(fetch.calls).toHaveLength(1);
  });

  it('an accepted entry stays stored while onAccepted has not settled successfully', async () => {
    const { outbox, storage } = setup(accepted, {
      acceptedRetentionMs: 100,
      onAccepted: () => Promise.reject(new Error('client could not follow')),
    });
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => storage.rows.get(operationId)?.state === 'accepted', 'accepted');
    await vi.advanceTimersByTimeAsync(10_000);
    await settle();
    expect(storage.rows.get(operationId)?.state).toBe('accepted');
  });

  it('backs off with full jitter between retries (503, 503, then 202)', async () => {
    const answers = [errorAnswer(503), errorAnswer(503)];
    const { outbox, fetch, recorder, entry } = setup((call) => answers.shift() ?? accepted(call), {
      random: () => 0.5,
      retry: { initialDelayMs: 1_000, factor: 2, maxDelayMs: 60_000 },
    });
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'first retry');
    // step 1: uniform in [0, 1000) → 0.5 · 1000
    expect(recorder.of('retry')[0]).toMatchObject({ scope: 'submit', id: operationId, attempt: 2, delayMs: 500 });
    expect(recorder.of('retry')[0]?.cause?.code).toBe('server_unavailable');
    expect(entry(operationId)).toMatchObject({ state: 'queued', attempts: 1, nextAttemptAt: T0 + 500, lastError: { code: 'server_unavailable', status: 503 } });
    await vi.advanceTimersByTimeAsync(499);
    expect(fetch.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => recorder.of('retry').length === 2, 'second retry');
    // step 2: 0.5 · 2000
    expect(recorder.of('retry')[1]).toMatchObject({ attempt: 3, delayMs: 1_000 });
    await vi.advanceTimersByTimeAsync(999);
    expect(fetch.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => entry(operationId)?.state === 'accepted', 'accepted');
    expect(fetch.calls.map((c) => c.key)).toEqual([operationId, operationId, operationId]);
    expect(entry(operationId)?.lastError).toBeUndefined();
  });

  it('caps each step at maxDelayMs', async () => {
    const { outbox, recorder } = setup(() => errorAnswer(500), {
      random: () => 0.999,
      retry: { initialDelayMs: 1_000, factor: 10, maxDelayMs: 3_000 },
    });
    outbox.enqueue('conv', 'x');
    for (let i = 1; i <= 4; i++) {
      await until(() => recorder.of('retry').length === i, `retry ${i}`);
      await vi.advanceTimersByTimeAsync(recorder.of('retry')[i - 1]?.delayMs ?? 0);
    }
    expect(recorder.of('retry').map((d) => d.delayMs)).toEqual([999, 2997, 2997, 2997]);
  });

  it('honours Retry-After in seconds over a shorter backoff', async () => {
    const answers = [errorAnswer(429, 'rate_limited', { 'Retry-After': '3' })];
    const { outbox, fetch, recorder } = setup((call) => answers.shift() ?? accepted(call));
    outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    expect(recorder.of('retry')[0]).toMatchObject({ delayMs: 3_000 });
    expect(recorder.of('retry')[0]?.cause).toMatchObject({ code: 'rate_limited', serverCode: 'rate_limited' });
    await vi.advanceTimersByTimeAsync(2_999);
    expect(fetch.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => fetch.calls.length === 2, 'second POST');
  });

  it('honours Retry-After as an HTTP date', async () => {
    const answers = [errorAnswer(503, 'overloaded', { 'Retry-After': new Date(T0 + 8_000).toUTCString() })];
    const { outbox, fetch, recorder } = setup((call) => answers.shift() ?? accepted(call));
    outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    expect(recorder.of('retry')[0]?.delayMs).toBe(8_000);
    await vi.advanceTimersByTimeAsync(7_999);
    expect(fetch.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => fetch.calls.length === 2, 'second POST');
  });

  it('caps Retry-After at maxRetryAfterMs', async () => {
    const answers = [errorAnswer(503, 'overloaded', { 'Retry-After': '86400' })];
    const { outbox, recorder } = setup((call) => answers.shift() ?? accepted(call), { retry: { maxRetryAfterMs: 20_000 } });
    outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    expect(recorder.of('retry')[0]?.delayMs).toBe(20_000);
  });

  it.each([400, 401, 403, 404, 413, 422])('%i fails at once with the server code, and is never retried', async (status) => {
    const { outbox, fetch, recorder, entry } = setup(() => errorAnswer(status, 'idempotency_key_reused'));
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => entry(operationId)?.state === 'failed', 'failed');
    expect(entry(operationId)?.lastError).toMatchObject({ code: 'submission_rejected', status, serverCode: 'idempotency_key_reused' });
    expect(recorder.of('failed')).toMatchObject([{ scope: 'submit', id: operationId, error: { code: 'submission_rejected', status } }]);
    await vi.advanceTimersByTimeAsync(60 * 60_000);
    expect(fetch.calls).toHaveLength(1);
    expect(recorder.of('retry')).toHaveLength(0);
  });

  it.each([
    ['network TypeError', () => Promise.reject(new TypeError('fetch failed')), 'network_error'],
    ['timeout', () => Promise.reject(new DOMException('timed out', 'TimeoutError')), 'timeout'],
    ['408', () => errorAnswer(408), 'timeout'],
    ['409 key in flight', () => errorAnswer(409, 'idempotency_key_in_flight'), 'http_error'],
    ['425', () => errorAnswer(425), 'http_error'],
    ['429', () => errorAnswer(429), 'rate_limited'],
    ['500', () => errorAnswer(500), 'http_error'],
    ['502', () => errorAnswer(502), 'http_error'],
    ['503', () => errorAnswer(503), 'server_unavailable'],
    ['504', () => errorAnswer(504), 'http_error'],
    ['200 text/html', () => new Response('<html></html>', { status: 200 }), 'invalid_response'],
  ] as const)('%s is retried with the same key until accepted', async (_name, first, code) => {
    let calls = 0;
    const { outbox, fetch, recorder, entry } = setup((call) => (++calls === 1 ? first() : accepted(call)));
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    expect(recorder.of('retry')[0]?.cause?.code).toBe(code);
    expect(entry(operationId)?.lastError?.code).toBe(code);
    await vi.advanceTimersByTimeAsync(recorder.of('retry')[0]?.delayMs ?? 0);
    await until(() => entry(operationId)?.state === 'accepted', 'accepted');
    expect(fetch.calls.map((c) => c.key)).toEqual([operationId, operationId]);
  });

  it('keeps each conversation in order: a later entry never overtakes a pending earlier one', async () => {
    let failures = 3;
    const { outbox, fetch, recorder } = setup((call) => {
      if (call.body.content === 'a1' && failures > 0) {
        failures -= 1;
        return errorAnswer(503);
      }
      return accepted(call);
    });
    const a1 = outbox.enqueue('a', 'a1');
    const a2 = outbox.enqueue('a', 'a2');
    const b1 = outbox.enqueue('b', 'b1');
    await until(() => fetch.calls.some((c) => c.key === b1.operationId), 'b1 sent while a1 retries');
    for (let i = 1; i <= 3; i++) {
      await until(() => recorder.of('retry').length === i, `retry ${i}`);
      expect(fetch.calls.some((c) => c.key === a2.operationId)).toBe(false);
      await vi.advanceTimersByTimeAsync(recorder.of('retry')[i - 1]?.delayMs ?? 0);
    }
    await until(() => fetch.calls.some((c) => c.key === a2.operationId), 'a2 sent');
    const order = fetch.calls.filter((c) => c.url.includes('/a/')).map((c) => c.body.content);
    expect(order).toEqual(['a1', 'a1', 'a1', 'a1', 'a2']);
    const a1Accepted = recorder.of('accepted').findIndex((d) => d.operationId === a1.operationId);
    const a2Submitted = recorder.list.findIndex((d) => d.type === 'submit' && d.operationId === a2.operationId);
    expect(a1Accepted).toBeGreaterThanOrEqual(0);
    expect(recorder.list.indexOf(recorder.of('accepted')[a1Accepted]!)).toBeLessThan(a2Submitted);
  });

  it('a failed entry does not block later entries of its conversation', async () => {
    const { outbox, fetch, entry } = setup((call) => (call.body.content === 'first' ? errorAnswer(422, 'idempotency_key_reused') : accepted(call)));
    const first = outbox.enqueue('conv', 'first');
    const second = outbox.enqueue('conv', 'second');
    await until(() => entry(second.operationId)?.state === 'accepted', 'second accepted');
    expect(entry(first.operationId)?.state).toBe('failed');
    expect(fetch.calls.map((c) => c.body.content)).toEqual(['first', 'second']);
  });

  it('gives up with retry_exhausted when maxAgeMs passes, then sends nothing more', async () => {
    const { outbox, fetch, recorder, entry } = setup(() => errorAnswer(503), {
      maxAgeMs: 10_000,
      retry: { initialDelayMs: 1_000, maxDelayMs: 2_000 },
    });
    const { operationId } = outbox.enqueue('conv', 'x');
    for (let elapsed = 0; elapsed < 20_000 && entry(operationId)?.state !== 'failed'; elapsed += 500) {
      await vi.advanceTimersByTimeAsync(500);
    }
    expect(entry(operationId)?.state).toBe('failed');
    expect(entry(operationId)?.lastError).toMatchObject({ code: 'retry_exhausted', status: 503 });
    expect(recorder.of('failed')).toMatchObject([{ id: operationId, error: { code: 'retry_exhausted' } }]);
    const failedAt = recorder.of('failed')[0]?.at ?? 0;
    expect(failedAt - T0).toBeLessThanOrEqual(10_000);
    // No retry was scheduled past the deadline.
    for (const retry of recorder.of('retry')) expect(retry.at + retry.delayMs).toBeLessThan(T0 + 10_000);
    const calls = fetch.calls.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fetch.calls).toHaveLength(calls);
  });

  it('an entry older than maxAgeMs found at start fails without a request', async () => {
    const { outbox, storage, fetch, recorder } = setup(accepted, { maxAgeMs: 1_000 });
    storage.rows.set('old-entry-0123456789', {
      operationId: 'old-entry-0123456789',
      conversationId: 'conv',
      content: 'stale',
      createdAt: T0 - 5_000,
      order: T0 - 5_000,
      attempts: 2,
      nextAttemptAt: T0 - 4_000,
      state: 'queued',
      lastError: { name: 'TransportError', kind: 'transport', code: 'network_error', message: 'x' },
    });
    await outbox.start();
    await until(() => recorder.of('failed').length === 1, 'failed');
    expect(recorder.of('failed')[0]?.error.code).toBe('retry_exhausted');
    expect(fetch.calls).toHaveLength(0);
  });

  it('offline pauses (no request at all); online retries at once', async () => {
    const network = createFakeNetwork(false);
    const answers = [errorAnswer(503, 'overloaded', { 'Retry-After': '60' })];
    const { outbox, fetch, recorder, entry } = setup((call) => answers.shift() ?? accepted(call), { network });
    const { operationId } = outbox.enqueue('conv', 'x');
    await settle();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(fetch.calls).toHaveLength(0);
    network.set(true);
    await until(() => recorder.of('retry').length === 1, 'first attempt answered 503');
    // Offline again, then online: the 60 s Retry-After wait is skipped.
    network.set(false);
    await settle();
    network.set(true);
    await until(() => entry(operationId)?.state === 'accepted', 'accepted without waiting 60 s');
    expect(fetch.calls).toHaveLength(2);
  });

  it('retry(id) re-arms a failed entry with the same key; discard(id) removes one', async () => {
    let reject = true;
    const { outbox, fetch, storage, entry } = setup((call) => (reject ? errorAnswer(400, 'invalid_body') : accepted(call)));
    const kept = outbox.enqueue('conv', 'kept');
    const dropped = outbox.enqueue('other', 'dropped');
    await until(() => entry(kept.operationId)?.state === 'failed' && entry(dropped.operationId)?.state === 'failed', 'both failed');
    vi.setSystemTime(T0 + 60_000);
    reject = false;
    await outbox.retry(kept.operationId);
    expect(entry(kept.operationId)).toMatchObject({ attempts: expect.any(Number), createdAt: T0 + 60_000 });
    await until(() => entry(kept.operationId)?.state === 'accepted', 'accepted after retry');
    expect(fetch.calls.filter((c) => c.key === kept.operationId)).toHaveLength(2);
    await outbox.discard(dropped.operationId);
    expect(entry(dropped.operationId)).toBeUndefined();
    expect(storage.rows.has(dropped.operationId)).toBe(false);
    expect(fetch.calls.filter((c) => c.key === dropped.operationId)).toHaveLength(1);
  });

  it('retry(id) of an entry waiting out a backoff sends it now', async () => {
    const answers = [errorAnswer(503, 'overloaded', { 'Retry-After': '30' })];
    const { outbox, fetch, recorder } = setup((call) => answers.shift() ?? accepted(call));
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    await outbox.retry(operationId);
    await until(() => fetch.calls.length === 2, 'sent at once');
  });

  it('discard(id) aborts the request this tab has in flight', async () => {
    const { outbox, fetch, storage, recorder } = setup((call) => new Promise((_, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason))));
    const { operationId } = outbox.enqueue('conv', 'x');
    await until(() => fetch.calls.length === 1, 'in flight');
    await outbox.discard(operationId);
    expect(fetch.calls[0]?.signal.aborted).toBe(true);
    await settle();
    expect(storage.rows.has(operationId)).toBe(false);
    expect(outbox.entries.getSnapshot()).toEqual([]);
    expect(recorder.of('retry')).toHaveLength(0);
  });

  it('clear() forgets every entry, aborts this tab’s request and writes nothing again (logout)', async () => {
    const { outbox, fetch, storage, recorder } = setup(hang);
    const sending = outbox.enqueue('conv', 'in flight');
    await until(() => fetch.calls.length === 1, 'in flight');
    const queued = outbox.enqueue('other', 'queued');
    const cleared = outbox.clear();
    expect(outbox.entries.getSnapshot()).toEqual([]);
    expect(fetch.calls[0]?.signal.aborted).toBe(true);
    // Then the caller clears storage; nothing of the forgotten entries comes back.
    await cleared;
    storage.rows.clear();
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(storage.rows.size).toBe(0);
    expect(fetch.calls.map((c) => c.key)).toEqual([sending.operationId]);
    expect(fetch.calls.some((c) => c.key === queued.operationId)).toBe(false);
    expect(recorder.of('retry')).toHaveLength(0);
  });

  it('start() sends what earlier pages left, including one left mid-flight, with the same key', async () => {
    const storage = createFakeStorage();
    const base = { conversationId: 'conv', createdAt: T0 - 1_000, attempts: 1, nextAttemptAt: T0 - 1_000 } as const;
    storage.rows.set('left-sending-000000001', { ...base, operationId: 'left-sending-000000001', content: 'one', order: 1, state: 'sending' });
    storage.rows.set('left-queued-0000000002', { ...base, operationId: 'left-queued-0000000002', content: 'two', order: 2, state: 'queued' });
    storage.rows.set('left-failed-0000000003', { ...base, operationId: 'left-failed-0000000003', content: 'three', order: 3, state: 'failed' });
    const { outbox, fetch, recorder, acceptedEntries } = setup(accepted, { storage });
    await outbox.start();
    expect(recorder.of('outbox-replay')).toMatchObject([{ count: 2 }]);
    await until(() => acceptedEntries.length === 2, 'both accepted');
    expect(fetch.calls.map((c) => c.key)).toEqual(['left-sending-000000001', 'left-queued-0000000002']);
  });

  it('start() hands accepted entries left by an earlier page to onAccepted', async () => {
    const storage = createFakeStorage();
    storage.rows.set('left-accepted-0000001', {
      operationId: 'left-accepted-0000001',
      conversationId: 'conv',
      content: 'hi',
      createdAt: T0 - 1_000,
      order: 1,
      attempts: 1,
      nextAttemptAt: T0 - 1_000,
      state: 'accepted',
      turnId: 'turn_left',
      messageId: 'msg_left',
      acceptedAt: T0 - 500,
    });
    const answers: unknown[] = [];
    const { outbox, fetch } = setup(accepted, { storage, onAccepted: (_entry, answer) => void answers.push(answer) });
    await outbox.start();
    await until(() => answers.length === 1, 'offered');
    expect(answers).toEqual([{ turnId: 'turn_left', messageId: 'msg_left', conversationId: 'conv', status: 'pending' }]);
    expect(fetch.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(10_000);
    await until(() => !storage.rows.has('left-accepted-0000001'), 'cleaned up');
  });

  it('keeps the same snapshot object while nothing changes, even across storage re-reads', async () => {
    const channel = channelFactory();
    const storage = createFakeStorage();
    let reads = 0;
    const load = storage.loadOutbox.bind(storage);
    storage.loadOutbox = () => {
      reads += 1;
      return load();
    };
    const { outbox } = setup(() => errorAnswer(400, 'invalid_body'), { channel, storage });
    outbox.enqueue('conv', 'x');
    await until(() => outbox.entries.getSnapshot()[0]?.state === 'failed', 'failed');
    await settle();
    const snapshot = outbox.entries.getSnapshot();
    expect(outbox.entries.getSnapshot()).toBe(snapshot);
    let notified = 0;
    outbox.entries.subscribe(() => notified++);
    // Another tab announces a change: this tab re-reads storage and finds nothing new.
    const readsBefore = reads;
    const otherTab = channel('lifeline-outbox:default');
    otherTab.postMessage({ type: 'changed' });
    otherTab.close();
    await until(() => reads > readsBefore, 're-read');
    await settle();
    expect(outbox.entries.getSnapshot()).toBe(snapshot);
    expect(notified).toBe(0);
  });

  it('a change made here while storage is being re-read is not undone by that read', async () => {
    const channel = channelFactory();
    const storage = createFakeStorage();
    const network = createFakeNetwork(true);
    let reject = true;
    const { outbox, entry } = setup((call) => (reject ? errorAnswer(400, 'invalid_body') : accepted(call)), { channel, storage, network });
    const failed = outbox.enqueue('conv', 'x');
    await until(() => storage.rows.get(failed.operationId)?.state === 'failed', 'failed and stored');
    // Offline, an entry of another conversation keeps the sender waiting (no re-read when it wakes).
    network.set(false);
    const waiting = outbox.enqueue('other', 'y');
    await until(() => storage.rows.has(waiting.operationId), 'waiting entry stored');
    await settle();
    // Another tab's notice starts a re-read that returns what storage holds now (failed), once released.
    let release: (() => void) | undefined;
    const load = storage.loadOutbox.bind(storage);
    storage.loadOutbox = async () => {
      storage.loadOutbox = load;
      const result = await load();
      await new Promise<void>((resolve) => (release = resolve));
      return result;
    };
    const otherTab = channel('lifeline-outbox:default');
    otherTab.postMessage(null);
    otherTab.close();
    await until(() => release !== undefined, 'the re-read under way');
    reject = false;
    await outbox.retry(failed.operationId);
    release?.();
    await settle();
    expect(entry(failed.operationId)?.state).toBe('queued');
    network.set(true);
    await until(() => entry(failed.operationId)?.state === 'accepted' && entry(waiting.operationId)?.state === 'accepted', 'both sent');
  });

  it('resolves headers afresh before every attempt', async () => {
    let token = 0;
    let calls = 0;
    const { outbox, fetch, recorder } = setup((call) => (++calls === 1 ? errorAnswer(503) : accepted(call)), {
      headers: async () => ({ authorization: `Bearer ${++token}` }),
    });
    outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    await vi.advanceTimersByTimeAsync(recorder.of('retry')[0]?.delayMs ?? 0);
    await until(() => fetch.calls.length === 2, 'second attempt');
    expect(fetch.calls.map((c) => c.headers.get('authorization'))).toEqual(['Bearer 1', 'Bearer 2']);
  });

  it('rejects bad input with invalid_argument and stores nothing', () => {
    const { outbox, storage } = setup(accepted);
    expect(() => outbox.enqueue('bad id!', 'x')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 42 as unknown as string)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 'x'.repeat(70_000))).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(outbox.entries.getSnapshot()).toEqual([]);
    expect(storage.rows.size).toBe(0);
  });

  it('when storage refuses the entry, written rejects, a diagnostic says so, and it is still sent', async () => {
    const { outbox, storage, recorder, acceptedEntries } = setup(accepted);
    storage.failPuts = true;
    const { written } = outbox.enqueue('conv', 'x');
    await expect(written).rejects.toMatchObject({ code: 'storage_quota_exceeded' });
    expect(recorder.of('storage-error').length).toBeGreaterThanOrEqual(1);
    await until(() => acceptedEntries.length === 1, 'sent from memory');
  });
});

/** A `localStorage` stand-in over `saved`. */
function mapJournal(saved: Map<string, string>): NonNullable<OutboxDeps['journal']> {
  return {
    getItem: (key) => saved.get(key) ?? null,
    setItem: (key, value) => void saved.set(key, value),
    removeItem: (key) => void saved.delete(key),
    key: (index) => [...saved.keys()][index] ?? null,
    get length() {
      return saved.size;
    },
  };
}

describe('outbox journal', () => {
  it('a message whose storage write never landed (the page went away right after send) is sent by the next page, once', async () => {
    const saved = new Map<string, string>();
    const journal = mapJournal(saved);
    const storage = createFakeStorage();
    // The first page's write never lands: it is gone before IndexedDB commits.
    const first = createOutbox(
      baseDeps({ storage: { ...storage, putOutbox: () => new Promise<void>(() => undefined) }, fetch: createFakeFetch(accepted), emit: () => undefined, journal }),
    );
    const { operationId } = first.enqueue('conv', 'sent just before a reload');
    first.dispose();
    expect(storage.rows.size).toBe(0);
    expect(saved.size).toBe(1);

    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    // A later page: its entries from before count as left by earlier pages.
    const next = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit, journal, clock: { now: () => performance.now() + 1_000, wallNow: () => Date.now() + 1_000 } }));
    outboxes.push(next);
    await next.start();
    expect(recorder.of('outbox-replay')[0]?.count).toBe(1);
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(fetch.calls.map((call) => call.key)).toEqual([operationId]);
    expect(saved.size).toBe(0);
  });

  it('keeps a journaled copy until storage holds its entry', async () => {
    const saved = new Map<string, string>();
    const journal = mapJournal(saved);
    const offline = { online: () => false, subscribe: () => () => undefined };
    const hung = { ...createFakeStorage(), putOutbox: () => new Promise<void>(() => undefined) };
    const first = createOutbox(baseDeps({ storage: hung, fetch: createFakeFetch(accepted), emit: () => undefined, journal, network: offline }));
    first.enqueue('conv', 'x');
    first.dispose();
    // The next page cannot write either (quota): the copy stays for the page after it.
    const full = createFakeStorage();
    full.failPuts = true;
    const recorder = createRecorder();
    const next = createOutbox(baseDeps({ storage: full, fetch: createFakeFetch(accepted), emit: recorder.emit, journal, network: offline }));
    outboxes.push(next);
    await next.start();
    expect(recorder.of('storage-error').map((d) => d.error.code)).toContain('storage_quota_exceeded');
    expect(saved.size).toBe(1);
  });

  it('a corrupt journal entry is reported and removed, other apps\' keys are kept; clear() empties the namespace\'s journal', async () => {
    const saved = new Map<string, string>([
      ['lifeline-outbox:default:garbage', '{not json'],
      ['another-app:key', 'kept'],
    ]);
    const journal = mapJournal(saved);
    const storage = createFakeStorage();
    const recorder = createRecorder();
    const outbox = createOutbox(baseDeps({ storage, fetch: createFakeFetch(() => new Promise<Response>(() => undefined)), emit: recorder.emit, journal, network: { online: () => false, subscribe: () => () => undefined } }));
    outboxes.push(outbox);
    await outbox.start();
    expect(recorder.of('storage-error').map((d) => [d.error.code, d.error.details])).toEqual([['storage_corrupt_record', { store: 'journal', key: '"garbage"' }]]);
    expect([...saved.keys()]).toEqual(['another-app:key']);
    outbox.enqueue('conv', 'pending');
    expect(saved.size).toBe(2);
    await outbox.clear();
    expect([...saved.keys()]).toEqual(['another-app:key']);
  });
});

describe('outbox (real timers)', () => {
  it("an app's own Content-Type and Idempotency-Key headers are replaced, not sent beside ours", async () => {
    const storage = createFakeStorage();
    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    const outbox = createOutbox(
      baseDeps({ storage, fetch, emit: recorder.emit, headers: { 'Content-Type': 'text/plain', 'Idempotency-Key': 'app-key', Authorization: 'Bearer t' } }),
    );
    outboxes.push(outbox);
    const { operationId } = outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    const sent = fetch.calls[0]!.headers;
    expect(sent.get('content-type')).toBe('application/json');
    expect(sent.get('idempotency-key')).toBe(operationId);
    expect(sent.get('authorization')).toBe('Bearer t');
  });

  it('a headers function that never answers times out like a hung request', async () => {
    const storage = createFakeStorage();
    let calls = 0;
    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    const outbox = createOutbox(
      baseDeps({
        storage,
        fetch,
        emit: recorder.emit,
        timeoutMs: 50,
        retry: { initialDelayMs: 1, maxDelayMs: 1 },
        headers: () => (++calls === 1 ? new Promise<Record<string, string>>(() => undefined) : { authorization: 'Bearer fresh' }),
      }),
    );
    outboxes.push(outbox);
    outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(recorder.of('retry')[0]?.cause?.code).toBe('timeout');
    expect(fetch.calls.map((c) => c.headers.get('authorization'))).toEqual(['Bearer fresh']);
  });

  it('aborts a request that hangs past timeoutMs and retries it as a timeout', async () => {
    let calls = 0;
    const storage = createFakeStorage();
    const fetch = createFakeFetch(
      (call) =>
        ++calls === 1 ? new Promise<Response>((_, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason))) : accepted(call),
    );
    const recorder = createRecorder();
    const outbox = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit, timeoutMs: 50, retry: { initialDelayMs: 1, maxDelayMs: 1 } }));
    outboxes.push(outbox);
    outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(recorder.of('retry')[0]?.cause?.code).toBe('timeout');
    expect(fetch.calls[0]?.signal.aborted).toBe(true);
  });
});
