/**
 * Issue 23, D1: when storage refuses a write and the client degrades to memory, a queued
 * message must keep its `localStorage` journal copy until a durable write lands (or it is
 * accepted), and `Enqueued.written` must say it is not durable. Else a reload loses it.
 */
import { setImmediate as macrotask } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { StorageError } from '../../../src/errors.js';
import { createOutbox } from '../../../src/outbox/outbox.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { OutboxRecord, Store } from '../../../src/storage/store.js';
import type { LifelineClient } from '../../../src/types.js';
import { baseDeps, createFakeFetch, createFakeStorage, createRecorder, hang } from './helpers.js';

/** `localStorage` as a page has it: shared by the "pages" of one test. */
function pageStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, String(value)),
    removeItem: (key) => void items.delete(key),
    clear: () => items.clear(),
  };
}

/** A store that looks durable (not `memory`) and refuses outbox writes with a quota error. */
function quotaStore(): Store {
  return {
    ...createMemoryStore(),
    kind: 'quota-test',
    putOutbox: () => Promise.reject(new StorageError('storage_quota_exceeded', 'QuotaExceededError')),
  };
}

const clients: LifelineClient[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.dispose();
  delete (globalThis as { localStorage?: Storage }).localStorage;
});

describe('D1: a queued message survives a reload after storage degrades', () => {
  it('keeps the journal copy of a message sent while start() runs, when its write then degrades storage', async () => {
    const journal = pageStorage();
    const fake = createFakeStorage();
    let durable = true;
    // Durable until the entry's own write: that one falls back to memory (a quota error degrading the store).
    const storage = { ...fake, durable: () => durable, putOutbox: async (entry: OutboxRecord) => (await macrotask(), (durable = false), fake.putOutbox(entry)) };
    const outbox = createOutbox(baseDeps({ storage, journal, fetch: createFakeFetch(hang), emit: createRecorder().emit }));
    // start() reads storage first; the message is sent meanwhile, so start's journal adoption
    // finds its copy while the entry's write is still on its way.
    const started = outbox.start();
    const { written } = outbox.enqueue('conv', 'sent during start');
    await started;
    await expect(written).rejects.toMatchObject({ code: 'storage_not_durable' });
    await macrotask();
    expect(journal.length).toBe(1);
    outbox.dispose();
  });

  it('keeps the journal copy once the store fell back to memory, and the next page sends it', async () => {
    const storage = pageStorage();
    (globalThis as { localStorage?: Storage }).localStorage = storage;
    const posts: string[] = [];
    // First page: posts never answer (the message stays unaccepted), storage degrades on the outbox write.
    const first = createLifeline({
      baseUrl: 'http://d1.test/api',
      storage: quotaStore(),
      fetch: async (input, init) => {
        if (String(input).endsWith('/messages')) posts.push(new Headers(init?.headers).get('idempotency-key') ?? '');
        return new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
      },
    });
    clients.push(first);
    await first.ready;
    const { operationId } = first.conversation('conv_d1').send('hello after quota');
    await vi.waitFor(() => expect(posts).toEqual([operationId]));
    expect(first.storageStatus.getSnapshot().state).toBe('degraded');
    const journaled = Array.from({ length: storage.length }, (_, i) => storage.getItem(storage.key(i)!) ?? '');
    expect(journaled).toEqual([expect.stringContaining('hello after quota')]);
    first.dispose();

    // The reload: a store that works, the same localStorage; the message goes out with its key.
    const accepted: string[] = [];
    const second = createLifeline({
      baseUrl: 'http://d1.test/api',
      storage: { ...createMemoryStore(), kind: 'works' },
      fetch: async (input, init) => {
        if (!String(input).endsWith('/messages')) return new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
        accepted.push(new Headers(init?.headers).get('idempotency-key') ?? '');
        return Response.json({ turnId: 'turn_d1_000000000001', messageId: 'msg_d1_0000000000001', conversationId: 'conv_d1', status: 'pending' }, { status: 202 });
      },
    });
    clients.push(second);
    await second.ready;
    await vi.waitFor(() => expect(accepted).toEqual([operationId]));
  });

  it('Enqueued.written rejects storage_not_durable while the storage is not durable, and the copy stays', async () => {
    const journal = pageStorage();
    const storage = { ...createFakeStorage(), durable: () => false };
    const outbox = createOutbox(baseDeps({ storage, journal, fetch: createFakeFetch(hang), emit: createRecorder().emit }));
    const { written } = outbox.enqueue('conv', 'kept');
    await expect(written).rejects.toMatchObject({ code: 'storage_not_durable' });
    await macrotask();
    expect(journal.length).toBe(1);
    outbox.dispose();
  });
});
