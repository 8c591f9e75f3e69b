/** The outbox sends at once, backs off between retries (Retry-After honoured, capped) and retries every transport error, 5xx and 429 with the same key. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { accepted, errorAnswer, settle, until, type Call } from './helpers.js';
import { disposeOutboxes, setup, T0, useFakeClock } from './outbox-rig.js';

afterEach(disposeOutboxes);

describe('outbox (fake timers): sending and retries', () => {
  useFakeClock();

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
});
