/**
 * The client's persistence: batched chunk writes (one call per flush for every turn),
 * flush on pagehide/hidden, fold at the end, retention sweep, storage failing mid-session
 * (degrade once, keep streaming), and start-up from storage before any network.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { StorageError } from '../../../src/errors.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import { createPersistence } from '../../../src/storage/persistence.js';
import type { Store, TurnRecord, TurnWrite } from '../../../src/storage/store.js';
import type { Diagnostic, Turn, TurnSnapshot } from '../../../src/types.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { replayAll, startTestServer, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { FAST_RETRY, follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** One `write` call: chunks (how many), a fold, or bare rows. */
type Call = { method: 'chunks' | 'fold' | 'rows'; items: number };

/** What a write call does: a fold (a row with text), chunks, or bare rows. */
const writeKind = (items: readonly TurnWrite[]): Call['method'] =>
  items.some(({ record }) => record.text !== undefined) ? 'fold' : items.some(({ chunk }) => chunk) ? 'chunks' : 'rows';

/** A memory store that records its write calls. */
function recordingStore(): { store: Store; inner: MemoryStore; calls: Call[] } {
  const inner = createMemoryStore();
  const calls: Call[] = [];
  const store: Store = {
    ...inner,
    kind: 'recording',
    write: (items) => {
      calls.push({ method: writeKind(items), items: items.length });
      return inner.write(items);
    },
  };
  return { store, inner, calls };
}

function delta(turnId: string, seq: number, text: string): TurnEvent {
  return { turnId, seq, type: 'delta', text };
}

function persistenceOver(store: Store, diagnostics: Diagnostic[] = []) {
  const persistence = createPersistence({
    store,
    flushMs: 16,
    flushEvents: 256,
    retentionMs: 1000,
    now: Date.now,
    emit: (diagnostic) => diagnostics.push(diagnostic),
  });
  for (const id of ['turn_a', 'turn_b']) persistence.track(id, () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 1 }));
  return persistence;
}

describe('batched writes', () => {
  it('writes one chunk per turn per flush, all turns in one write call, after flushMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const { store, inner, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    for (let seq = 1; seq <= 10; seq++) {
      persistence.append('turn_a', delta('turn_a', seq, `a${seq}`));
      persistence.append('turn_b', delta('turn_b', seq, `b${seq}`));
    }
    await vi.advanceTimersByTimeAsync(15);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await persistence.flush();
    expect(calls).toEqual([{ method: 'chunks', items: 2 }]);
    const loaded = await inner.loadTurn('turn_a');
    expect(loaded?.events.map((event) => event.seq)).toEqual(range(10));
    expect(loaded?.record.lastSeq).toBe(10);
  });

  it('flushes at once when flushEvents are buffered, without waiting for the timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const { store, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    for (let seq = 1; seq <= 256; seq++) persistence.append('turn_a', delta('turn_a', seq, 'x'));
    await expect.poll(() => calls).toEqual([{ method: 'chunks', items: 1 }]);
  });

  it('writes one contiguous chunk per run of seqs, all in one write call', async () => {
    const { store, inner, calls } = recordingStore();
    const persistence = persistenceOver(store);
    await persistence.open();
    persistence.append('turn_a', delta('turn_a', 1, 'a'));
    persistence.append('turn_a', delta('turn_a', 2, 'b'));
    // seq 3 was an unknown event type: skipped, so the run splits.
    persistence.append('turn_a', delta('turn_a', 4, 'd'));
    persistence.append('turn_b', delta('turn_b', 1, 'x'));
    await persistence.flush();
    expect(calls).toEqual([{ method: 'chunks', items: 3 }]);
    // Stored chunks are contiguous; a load stops at the hole so the client refetches from there.
    expect((await inner.loadTurn('turn_a'))?.events.map((event) => event.seq)).toEqual([1, 2]);
  });
});

describe('bursts: capped writes, one in flight', () => {
  /** A store whose batch writes stay open until the test completes them, like slow IndexedDB transactions. */
  function gatedStore() {
    const inner = createMemoryStore();
    const writes: number[] = [];
    const open: (() => void)[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const store: Store = {
      ...inner,
      kind: 'gated',
      // Only chunk writes are gated (and counted); rows and folds go straight through.
      write: async (items) => {
        if (writeKind(items) != 'chunks') return inner.write(items);
        writes.push(items.reduce((sum, item) => sum + item.chunk!.events.length, 0));
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise<void>((resolve) => open.push(resolve));
        inFlight -= 1;
        await inner.write(items);
      },
    };
    return { store, inner, writes, open, maxInFlight: () => maxInFlight };
  }

  /** One macrotask: what separates two network reads. */
  const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('writes a 100 000-event burst in capped transactions, one at a time, and every event lands in order', async () => {
    const gated = gatedStore();
    const persistence = persistenceOver(gated.store);
    await persistence.open();
    const total = 100_000;
    const perRead = 700;
    let reads = 0;
    for (let first = 1; first <= total; first += perRead) {
      for (let seq = first; seq < first + perRead && seq <= total; seq++) persistence.append('turn_a', delta('turn_a', seq, 'x'));
      reads += 1;
      // Storage is slower than the stream: one transaction completes every ten reads, so a backlog builds up.
      if (reads % 10 === 0) gated.open.shift()?.();
      await nextTask();
    }
    const flushed = persistence.flush();
    let settled = false;
    void flushed.then(() => (settled = true));
    while (!settled) {
      gated.open.shift()?.();
      await nextTask();
    }
    const cap = 256 * 16;
    expect(gated.writes.reduce((sum, events) => sum + events, 0)).toBe(total);
    expect(Math.max(...gated.writes)).toBeLessThanOrEqual(cap);
    expect(gated.maxInFlight()).toBe(1);
    // Under a backlog every write is full: about total / cap transactions, not one per flushEvents.
    expect(gated.writes.length).toBeLessThanOrEqual(Math.ceil(total / cap) + 12);
    expect(gated.writes.filter((events) => events === cap).length).toBeGreaterThanOrEqual(Math.floor(total / cap) - 1);
    const loaded = await gated.inner.loadTurn('turn_a');
    expect(loaded?.events.length).toBe(total);
    expect(loaded?.events.every((event, index) => event.seq === index + 1)).toBe(true);
    expect(loaded?.record.lastSeq).toBe(total);
  });

  it('serves every turn under a backlog; an ended turn writes its rest in capped writes, then folds', async () => {
    const gated = gatedStore();
    const persistence = createPersistence({
      store: gated.store,
      flushMs: 16,
      flushEvents: 10,
      maxWriteEvents: 50,
      retentionMs: 1000,
      now: Date.now,
      emit: () => undefined,
    });
    for (const id of ['turn_a', 'turn_b']) persistence.track(id, () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 1 }));
    await persistence.open();
    for (let seq = 1; seq <= 200; seq++) persistence.append('turn_a', delta('turn_a', seq, 'a'));
    for (let seq = 1; seq <= 20; seq++) persistence.append('turn_b', delta('turn_b', seq, 'b'));
    // The first write took 50 of turn_a; turn_b goes next, before the rest of turn_a's backlog.
    await expect.poll(() => gated.writes).toEqual([50]);
    gated.open.shift()?.();
    await expect.poll(() => gated.writes).toEqual([50, 50]);
    expect((await gated.inner.loadTurn('turn_b'))?.events ?? []).toEqual([]);
    const ended = persistence.end('turn_a', { status: 'complete', text: 'a'.repeat(200), actions: [], parts: [{ at: 0 }], lastSeq: 200 });
    const flushed = persistence.flush();
    let settled = false;
    void Promise.all([ended, flushed]).then(() => (settled = true));
    while (!settled) {
      gated.open.shift()?.();
      await nextTask();
    }
    // turn_a's other 120 events went out in writes of at most 50, then the fold deleted its chunks.
    expect(gated.writes).toEqual([50, 50, 50, 50, 20]);
    expect((await gated.inner.loadTurn('turn_b'))?.events.map((event) => event.seq)).toEqual(range(20));
    const folded = await gated.inner.loadTurn('turn_a');
    expect(folded?.record).toEqual(expect.objectContaining({ status: 'complete', lastSeq: 200, text: 'a'.repeat(200) }));
    expect(folded?.events).toEqual([]);
  });
});

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

describe('flush triggers and the end of a turn', () => {
  it('flushes on pagehide and on visibilitychange to hidden', async () => {
    const page = new EventTarget();
    const documentTarget = new EventTarget();
    const scope = globalThis as unknown as Record<string, unknown>;
    const previousDocument = scope['document'];
    scope['addEventListener'] = page.addEventListener.bind(page);
    scope['removeEventListener'] = page.removeEventListener.bind(page);
    const fakeDocument = {
      hidden: false,
      visibilityState: 'visible',
      addEventListener: documentTarget.addEventListener.bind(documentTarget),
      removeEventListener: documentTarget.removeEventListener.bind(documentTarget),
    };
    scope['document'] = fakeDocument;
    cleanup.push(() => {
      delete scope['addEventListener'];
      delete scope['removeEventListener'];
      scope['document'] = previousDocument;
    });

    const log = await buildLog(['a', 'b', 'c', 'd']);
    let write: ((events: TurnEvent[]) => void) | undefined;
    const server = await startScriptedServer({
      log,
      stream: ({ res }) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        write = (events) => res.write(events.map(sse).join(''));
        write(log.slice(0, 2));
        return undefined;
      },
    });
    cleanup.push(() => server.close());
    // A flush timer that never fires within the test: only the page events can flush.
    const followed = follow(server.baseUrl, TURN, { flushMs: 3_600_000 });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(2);
    expect((await followed.store.loadTurn(TURN))?.events ?? []).toEqual([]);
    page.dispatchEvent(new Event('pagehide'));
    await expect.poll(async () => (await followed.store.loadTurn(TURN))?.events.length).toBe(2);

    write?.(log.slice(2, 4));
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(4);
    fakeDocument.visibilityState = 'hidden';
    documentTarget.dispatchEvent(new Event('visibilitychange'));
    await expect.poll(async () => (await followed.store.loadTurn(TURN))?.events.length).toBe(4);
  });

  it('folds the turn at its end: text and actions in the row, no chunks left', async () => {
    const log = await buildLog(['Hel', { action: { callId: 'c1', name: 'propose_personas', status: 'completed', output: [1, 2] } }, 'lo']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    await followed.turn.completed;
    await expect.poll(async () => (await followed.store.loadTurn(TURN))?.record).toEqual(
      expect.objectContaining({ status: 'complete', text: 'Hello', lastSeq: log.length, actions: [expect.objectContaining({ callId: 'c1', output: [1, 2] })] }),
    );
    expect((await followed.store.loadTurn(TURN))?.events).toEqual([]);
  });

  it('asks for persistent storage when told to and shows the answer in the status', async () => {
    const persist = vi.fn(async () => true);
    Object.defineProperty(globalThis, 'navigator', { value: { storage: { persist } }, configurable: true, writable: true });
    cleanup.push(() => void delete (globalThis as { navigator?: unknown }).navigator);
    const diagnostics: Diagnostic[] = [];
    const client = createLifeline({ baseUrl: 'http://127.0.0.1:9/api', storage: 'memory', persist: true, onDiagnostic: (d) => diagnostics.push(d) });
    cleanup.push(() => client.dispose());
    await client.ready;
    expect(persist).toHaveBeenCalledTimes(1);
    expect(client.storageStatus.getSnapshot()).toEqual({ state: 'memory', kind: 'memory', persisted: true });
    expect(diagnostics.filter((d) => d.type === 'storage').at(-1)).toEqual(expect.objectContaining({ status: expect.objectContaining({ persisted: true }) }));
  });

  it('sweeps ended turns older than retentionMs at start', async () => {
    const store = createMemoryStore();
    const now = Date.now();
    const ended = (id: string, endedAt: number): TurnRecord => ({ id, conversationId: 'c', status: 'complete', lastSeq: 2, createdAt: endedAt, updatedAt: endedAt, endedAt, text: 'x', actions: [] });
    await store.write([{ record: ended('old_turn', now - 10_000) }]);
    await store.write([{ record: ended('new_turn', now - 10) }]);
    const client = createLifeline({ baseUrl: 'http://127.0.0.1:9/api', storage: store, retentionMs: 5_000 });
    cleanup.push(() => client.dispose());
    await client.ready;
    await expect.poll(async () => (await store.loadTurns()).items.map((record) => record.id)).toEqual(['new_turn']);
  });
});

describe('start-up from storage (row 20, issue 5)', () => {
  it('shows stored text before any request, then resumes from the stored lastSeq (path reload)', async () => {
    const log = await buildLog(['Hel', 'lo ', '世界', '😀']);
    const store = createMemoryStore();
    const record: TurnRecord = { id: TURN, conversationId: 'conv_1', status: 'streaming', lastSeq: 3, createdAt: 1, updatedAt: 1 };
    await store.write([{ record: record, chunk: { turnId: TURN, firstSeq: 1, lastSeq: 3, events: log.slice(0, 3) } }]);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    let atFirstRequest: readonly TurnSnapshot[] | undefined;
    const client = createLifeline({
      baseUrl: server.baseUrl,
      storage: store,
      retry: FAST_RETRY,
      fetch: (input, init) => {
        atFirstRequest ??= client.turns.getSnapshot();
        return fetch(input, init);
      },
    });
    cleanup.push(() => client.dispose());
    await client.ready;
    expect(client.turns.getSnapshot().map((turn) => turn.text)).toEqual(['Hello ']);
    const turn = client.turn(TURN);
    expect(turn.getSnapshot()).toEqual(expect.objectContaining({ text: 'Hello ', lastSeq: 3, recovered: expect.objectContaining({ path: 'reload', events: 3 }) }));
    const final = await turn.completed;
    expect(atFirstRequest?.map((snapshot) => snapshot.text)).toEqual(['Hello ']);
    expect(final.text).toBe('Hello 世界😀');
    expect(final.recovered?.path).not.toBe('resume');
    expect(server.streams[0]?.cursor).toBe('3');
    // Recovery of the conversation ran by itself at start: its list endpoint was asked.
    expect(server.requests.some((request) => request.kind === 'list')).toBe(true);
  });

  it('records an accepted turn at once (outbox seam), so a reload before its first event still follows it', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_accepted', 'go');
    const control = await agent.nextTurn();
    const store = createMemoryStore();
    const first = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
    const seam = first as unknown as { followAccepted(entry: { operationId: string; conversationId: string }, accepted: typeof answer): Turn };
    const turn = seam.followAccepted({ operationId: 'op_accepted_0123456789', conversationId: 'conv_accepted' }, answer);
    expect(turn.getSnapshot()).toBe(first.turn(answer.turnId).getSnapshot());
    expect(turn.getSnapshot()).toEqual(expect.objectContaining({ conversationId: 'conv_accepted', messageId: answer.messageId }));
    await expect.poll(async () => (await store.loadTurn(answer.turnId))?.record).toEqual(
      expect.objectContaining({ conversationId: 'conv_accepted', operationId: 'op_accepted_0123456789', messageId: answer.messageId }),
    );
    first.dispose();

    const second = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
    cleanup.push(() => second.dispose());
    await second.ready;
    expect(second.turns.getSnapshot().map((snapshot) => snapshot.id)).toEqual([answer.turnId]);
    await control.delta('after the reload');
    await control.end();
    const final = await second.turn(answer.turnId).completed;
    expect(final.text).toBe('after the reload');
    expect(final.status).toBe('complete');
  });

  it('serves a stored ended turn from storage without any request', async () => {
    const store = createMemoryStore();
    const now = Date.now();
    await store.write([{ record: { id: TURN, conversationId: 'conv_1', status: 'complete', lastSeq: 5, createdAt: now, updatedAt: now, endedAt: now, text: 'stored answer', actions: [] } }]);
    const requests: string[] = [];
    const client = createLifeline({
      baseUrl: 'http://127.0.0.1:9/api',
      storage: store,
      fetch: (input) => {
        requests.push(String(input));
        return Promise.reject(new Error('no network in this test'));
      },
    });
    cleanup.push(() => client.dispose());
    const final = await client.turn(TURN).completed;
    expect(final).toEqual(expect.objectContaining({ status: 'complete', text: 'stored answer', lastSeq: 5 }));
    expect(requests).toEqual([]);
  });

  it('recover() after storage was cleared finds and replays the conversation\'s turns', async () => {
    const server = await startTestServer({ agent: textAgent('Answer with 日本語 and 😀.') });
    cleanup.push(() => server.close());
    const first = await submitMessage(server.baseUrl, 'conv_lost', 'one');
    const second = await submitMessage(server.baseUrl, 'conv_lost', 'two');
    await waitForTurnEnd(server.log, first.turnId);
    await waitForTurnEnd(server.log, second.turnId);
    const before = follow(server.baseUrl, first.turnId);
    await before.turn.completed;
    await before.client.clearStorage();
    expect((await before.store.loadTurns()).items).toEqual([]);
    before.client.dispose();

    const client = createLifeline({ baseUrl: server.baseUrl, storage: before.store, retry: FAST_RETRY });
    cleanup.push(() => client.dispose());
    const recovered = await client.recover('conv_lost');
    expect(recovered.map((turn) => turn.id).sort()).toEqual([first.turnId, second.turnId].sort());
    for (const turn of recovered) {
      const { events } = await replayAll(server.baseUrl, turn.id);
      expect(turn).toEqual(expect.objectContaining({ status: 'complete', text: textOf(events), recovered: expect.objectContaining({ path: 'replay' }) }));
    }
    expect(client.turns.getSnapshot()).toHaveLength(2);
  });
});
