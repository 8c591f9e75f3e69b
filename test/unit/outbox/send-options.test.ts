/**
 * What a submission carries beside its content (docs/protocol.md section 1, since 1.2): a
 * `context` sent and stored with the entry, per-request headers sent but never stored, and a
 * caller-derived Idempotency-Key that makes one entry however often it is sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import type { OutboxEntry } from '../../../src/types.js';
import { accepted, baseDeps, createFakeFetch, createFakeStorage, until, type Call } from './helpers.js';

let outboxes: OutboxController[] = [];
afterEach(() => {
  for (const outbox of outboxes) outbox.dispose();
  outboxes = [];
});

function setup(storage = createFakeStorage()) {
  const fetch = createFakeFetch(accepted);
  const acceptedEntries: OutboxEntry[] = [];
  const outbox = createOutbox(baseDeps({ storage, fetch, journal: null, retry: { initialDelayMs: 2, maxDelayMs: 20 }, emit: () => undefined, onAccepted: (entry) => void acceptedEntries.push(entry) }));
  outboxes.push(outbox);
  return { storage, fetch, outbox, acceptedEntries };
}

const KEY = 'continue-0123456789abcdef';

describe('send options', () => {
  it('sends context in the body and stores it; sends headers without storing them', async () => {
    const { outbox, storage, fetch } = setup();
    const storedBeforePost: unknown[] = [];
    fetch.responder = (call) => (storedBeforePost.push(structuredClone(storage.rows.get(call.key))), accepted(call));
    const { operationId } = outbox.enqueue('conv', 'hello', { context: { body: { model: 'small' }, metadata: { locale: 'nb' } }, headers: { 'x-tier': 'pro' } });
    await until(() => fetch.calls.length === 1, 'the POST');
    const call = fetch.calls[0] as Call;
    expect(call.body).toEqual({ content: 'hello', context: { body: { model: 'small' }, metadata: { locale: 'nb' } } });
    expect(call.headers.get('x-tier')).toBe('pro');
    expect(call.headers.get('idempotency-key')).toBe(operationId);
    expect(storedBeforePost[0]).toMatchObject({ context: { body: { model: 'small' }, metadata: { locale: 'nb' } } });
    expect(JSON.stringify(storedBeforePost[0])).not.toContain('x-tier');
  });

  it('a named key sent twice is one entry and one request; a bad key or context is refused before storing', async () => {
    const { outbox, fetch, acceptedEntries, storage } = setup();
    expect(outbox.enqueue('conv', { role: 'assistant' }, { operationId: KEY }).operationId).toBe(KEY);
    expect(outbox.enqueue('conv', { role: 'assistant' }, { operationId: KEY }).operationId).toBe(KEY);
    expect(outbox.entries.getSnapshot()).toHaveLength(1);
    await until(() => acceptedEntries.length === 1, 'accepted');
    expect(fetch.calls.map((call) => call.key)).toEqual([KEY]);
    // The same key with another body is refused as the server would (422), without a request.
    expect(() => outbox.enqueue('conv', { role: 'assistant', other: true }, { operationId: KEY })).toThrow(expect.objectContaining({ status: 422, serverCode: 'idempotency_key_reused' }));
    expect(fetch.calls).toHaveLength(1);
    expect(() => outbox.enqueue('conv', 'x', { operationId: 'short' })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 'x', { context: { big: 'x'.repeat(17 * 1024) } })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 'x', { context: [] as never })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(storage.rows.size).toBe(1);
  });

  it('a reloaded page sends the stored context again under the same key, without the headers', async () => {
    const storage = createFakeStorage();
    const first = setup(storage);
    first.fetch.responder = () => new Response(null, { status: 503 });
    first.outbox.enqueue('conv', 'hello', { operationId: KEY, context: { body: { n: 1 } }, headers: { authorization: 'Bearer secret' } });
    await until(() => first.fetch.calls.length >= 1, 'a first attempt');
    first.outbox.dispose();
    const second = setup(storage);
    await second.outbox.start();
    await until(() => second.fetch.calls.length >= 1, 'the attempt after the reload');
    const call = second.fetch.calls[0] as Call;
    expect(call.key).toBe(KEY);
    expect(call.body).toEqual({ content: 'hello', context: { body: { n: 1 } } });
    expect(call.headers.get('authorization')).toBeNull();
  });
});
