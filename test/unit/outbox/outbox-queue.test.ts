/** The outbox keeps each conversation in order, gives up after maxAgeMs, pauses offline, and answers retry, discard, clear and start. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { accepted, createFakeNetwork, createFakeStorage, errorAnswer, hang, settle, until } from './helpers.js';
import { disposeOutboxes, setup, T0, useFakeClock } from './outbox-rig.js';

afterEach(disposeOutboxes);

describe('outbox (fake timers): order, give-up and controls', () => {
  useFakeClock();

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
});
