/**
 * The client's persistence: flush on pagehide/hidden, fold at the end, retention sweep, and start-up from storage before any network.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { TurnRecord } from '../../../src/storage/store.js';
import type { Diagnostic, Turn, TurnSnapshot } from '../../../src/types.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { replayAll, startTestServer, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { FAST_RETRY, follow } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';
import { cleanup, runCleanups } from './support/persistence-rig.js';

afterEach(runCleanups);

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
