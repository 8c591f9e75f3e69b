/**
 * The client's persistence when storage fails mid-session or cannot open: it degrades to memory once, says so once, and keeps streaming.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { StorageError } from '../../../src/errors.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { Store } from '../../../src/storage/store.js';
import type { Diagnostic } from '../../../src/types.js';
import { textAgent } from '../../fixtures/agents.js';
import { replayAll, startTestServer, submitMessage, textOf } from '../../fixtures/server.js';
import { FAST_RETRY } from './support/follow.js';
import { cleanup, writeKind, delta, persistenceOver, runCleanups } from './support/persistence-rig.js';

afterEach(runCleanups);

describe('storage failing mid-session (rows 27, 28)', () => {
  function flakyStore(failFrom: number, failOpen = false): { store: Store; writes: () => number } {
    const inner = createMemoryStore();
    let writes = 0;
    const quota = (): never => {
      throw new StorageError('storage_quota_exceeded', 'The storage quota is exhausted.');
    };
    const store: Store = {
      ...inner,
      kind: 'flaky',
      open: () => (failOpen ? Promise.reject(new StorageError('storage_unavailable', 'No IndexedDB here.')) : inner.open()),
      // Chunk writes and folds count (and fail from the `failFrom`th on); bare rows go through.
      write: async (items) => {
        if (writeKind(items) == 'rows') return inner.write(items);
        writes += 1;
        if (writes >= failFrom) quota();
        return inner.write(items);
      },
    };
    return { store, writes: () => writes };
  }

  it('switches to memory once, reports it once, keeps streaming, and never rejects unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanup.push(() => void process.off('unhandledRejection', onUnhandled));
    const server = await startTestServer({ agent: textAgent('日本語 and emoji 😀 '.repeat(40), { chunk: 2 }) });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_quota', 'go');
    const { store, writes } = flakyStore(3);
    const diagnostics: Diagnostic[] = [];
    const client = createLifeline({ baseUrl: server.baseUrl, storage: store, flushEvents: 4, retry: FAST_RETRY, onDiagnostic: (d) => diagnostics.push(d) });
    cleanup.push(() => client.dispose());
    const final = await client.turn(answer.turnId).completed;
    const { events } = await replayAll(server.baseUrl, answer.turnId);
    expect(final.text).toBe(textOf(events));
    expect(writes()).toBeGreaterThanOrEqual(3);
    const status = client.storageStatus.getSnapshot();
    expect(status).toEqual(expect.objectContaining({ state: 'degraded', kind: 'flaky' }));
    expect(status.cause?.code).toBe('storage_quota_exceeded');
    const storage = diagnostics.filter((d): d is Extract<Diagnostic, { type: 'storage' }> => d.type === 'storage');
    expect(storage.map((d) => d.status.state)).toEqual(['ok', 'degraded']);
    expect(unhandled).toEqual([]);
  });

  it('degrades visibly even when the failing store throws on close, and keeps the events in memory', async () => {
    const inner = createMemoryStore();
    const store: Store = {
      ...inner,
      kind: 'brittle',
      write: () => Promise.reject(new StorageError('storage_quota_exceeded', 'The storage quota is exhausted.')),
      close: () => {
        throw new Error('close failed');
      },
    };
    const diagnostics: Diagnostic[] = [];
    const persistence = persistenceOver(store, diagnostics);
    await persistence.open();
    for (let seq = 1; seq <= 3; seq++) persistence.append('turn_a', delta('turn_a', seq, `a${seq}`));
    await persistence.flush();
    expect(persistence.status.getSnapshot()).toEqual(expect.objectContaining({ state: 'degraded', kind: 'brittle' }));
    expect(diagnostics.filter((d) => d.type === 'storage').map((d) => d.type === 'storage' && d.status.state)).toEqual(['ok', 'degraded']);
    expect((await persistence.loadTurn('turn_a'))?.events.map((event) => event.seq)).toEqual([1, 2, 3]);
  });

  it('reports a write that fails in memory too (after degrading), and goes on', async () => {
    const diagnostics: Diagnostic[] = [];
    const persistence = persistenceOver(createMemoryStore(), diagnostics);
    await persistence.open();
    // A function cannot be cloned: the row write fails in the store and again in the memory fallback.
    persistence.setMessage('turn_a', { content: { run: (() => 1) as unknown as string } });
    persistence.saveTurn('turn_a');
    await persistence.flush();
    const errors = diagnostics.filter((d): d is Extract<Diagnostic, { type: 'storage-error' }> => d.type === 'storage-error');
    expect(errors).toHaveLength(1);
    expect(persistence.status.getSnapshot().state).toBe('degraded');
    // The layer still works for the next turn.
    persistence.append('turn_b', delta('turn_b', 1, 'b1'));
    await persistence.flush();
    expect((await persistence.loadTurn('turn_b'))?.events).toHaveLength(1);
  });

  it('works in memory when the store cannot open, with one diagnostic, and routes the outbox there too', async () => {
    const server = await startTestServer({ agent: textAgent('fine') });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_noidb', 'go');
    const { store } = flakyStore(Number.POSITIVE_INFINITY, true);
    const diagnostics: Diagnostic[] = [];
    const client = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY, onDiagnostic: (d) => diagnostics.push(d) });
    cleanup.push(() => client.dispose());
    await client.ready;
    expect(client.storageStatus.getSnapshot()).toEqual(expect.objectContaining({ state: 'degraded' }));
    expect(diagnostics.filter((d) => d.type === 'storage')).toHaveLength(1);
    expect((await client.turn(answer.turnId).completed).text).toBe('fine');
    const outbox = (client as unknown as { outboxStorage: Pick<Store, 'putOutbox' | 'loadOutbox'> }).outboxStorage;
    const record = { operationId: 'op_0123456789abcdef', conversationId: 'conv_noidb', content: 'hi', createdAt: 1, order: 1, attempts: 0, nextAttemptAt: 1, state: 'queued' as const };
    await outbox.putOutbox(record);
    expect((await outbox.loadOutbox()).items).toEqual([record]);
  });
});
