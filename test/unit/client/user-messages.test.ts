/**
 * Durable user messages: the row of a turn keeps the message that started it, so after a
 * reload (the outbox entry long deleted) the conversation still lists the user message
 * before its answer, from storage and without the network. Run over the memory store and
 * over IndexedDB (fake-indexeddb), a new client on the same store standing for the reload.
 */
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createIndexedDbStore } from '../../../src/storage/indexeddb-store.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { Store, TurnRecord } from '../../../src/storage/store.js';
import type { ConversationItem, LifelineClient } from '../../../src/types.js';
import { textAgent } from '../../fixtures/agents.js';
import { startTestServer } from '../../fixtures/server.js';
import { FAST_RETRY } from './support/follow.js';
import { buildLog, startScriptedServer, TURN } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const ANSWER = 'Four, and 😀 for the record.';
const QUESTION = { text: 'What is 2 + 2?', attachments: ['none'] };

/** Each call is one page load: a new store object over the same data. */
const backends: { name: string; stores: () => () => Store }[] = [
  {
    name: 'memory store',
    stores: () => {
      const store = createMemoryStore();
      return () => store;
    },
  },
  {
    name: 'IndexedDB (fake-indexeddb)',
    stores: () => {
      const factory = new IDBFactory();
      return () => createIndexedDbStore({ namespace: 'messages', indexedDB: factory });
    },
  },
];

function shown(items: readonly ConversationItem[]): unknown[] {
  return items.map((item) => (item.role === 'user' ? ['user', item.key, item.content] : ['assistant', item.key, item.turn?.status, item.turn?.text]));
}

/** A client that must not touch the network: whatever it shows comes from storage. */
function offlineClient(store: Store, requests: string[]): LifelineClient {
  const client = createLifeline({
    baseUrl: 'http://127.0.0.1:9/api',
    storage: store,
    retry: FAST_RETRY,
    fetch: (input) => {
      requests.push(String(input));
      return Promise.reject(new Error('no network after the reload'));
    },
  });
  cleanup.push(() => client.dispose());
  return client;
}

describe.each(backends)('user messages survive a reload ($name)', ({ stores }) => {
  it('lists the user message, then its completed turn, from storage alone once the outbox entry is gone', async () => {
    const server = await startTestServer({ agent: textAgent(ANSWER) });
    cleanup.push(() => server.close());
    const page = stores();
    const firstStore = page();
    const first = createLifeline({ baseUrl: server.baseUrl, storage: firstStore, retry: FAST_RETRY });
    const submission = first.conversation('conv_reload').send(QUESTION);
    const turn = await submission.accepted;
    expect((await turn.completed).text).toBe(ANSWER);
    // The folded row carries the message (and nothing about the request: no headers).
    await expect.poll(async () => (await firstStore.loadTurn(turn.id))?.record).toEqual(
      expect.objectContaining({ status: 'complete', text: ANSWER, operationId: submission.operationId, content: QUESTION }),
    );
    const stored = (await firstStore.loadTurn(turn.id))?.record as TurnRecord;
    expect(Object.keys(stored).sort()).toEqual(
      ['actions', 'content', 'conversationId', 'createdAt', 'endedAt', 'id', 'lastSeq', 'messageId', 'operationId', 'parts', 'status', 'text', 'updatedAt'],
    );
    first.dispose();
    // What the outbox does ~10 s after acceptance: the entry is deleted.
    await firstStore.deleteOutbox(submission.operationId);
    expect((await firstStore.loadOutbox()).items).toEqual([]);
    firstStore.close();

    const requests: string[] = [];
    const second = offlineClient(page(), requests);
    const conversation = second.conversation('conv_reload');
    await expect.poll(() => shown(conversation.getSnapshot().items)).toEqual([
      ['user', submission.operationId, QUESTION],
      ['assistant', turn.id, 'complete', ANSWER],
    ]);
    expect(requests).toEqual([]);
    // Another conversation does not get this one's messages.
    expect(second.conversation('conv_other').getSnapshot().items).toEqual([]);
  });

  it('puts the stored message before a turn restored mid-stream, and keeps it through the fold after the reload', async () => {
    const log = await buildLog(['Hel', 'lo ', 'again'], { conversationId: 'conv_mid' });
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const page = stores();
    const firstStore = page();
    const record: TurnRecord = { id: TURN, conversationId: 'conv_mid', operationId: 'op_mid_0123456789abc', content: 'half way', status: 'streaming', lastSeq: 2, createdAt: 5, updatedAt: 5 };
    await firstStore.write([{ record: record, chunk: { turnId: TURN, firstSeq: 1, lastSeq: 2, events: log.slice(0, 2) } }]);
    firstStore.close();

    const store = page();
    const client = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
    cleanup.push(() => client.dispose());
    await client.ready;
    const conversation = client.conversation('conv_mid');
    // Before any request: the restored partial turn, its message first.
    expect(shown(conversation.getSnapshot().items)).toEqual([
      ['user', 'op_mid_0123456789abc', 'half way'],
      ['assistant', TURN, 'streaming', 'Hel'],
    ]);
    expect((await client.turn(TURN).completed).text).toBe('Hello again');
    await expect.poll(async () => (await store.loadTurn(TURN))?.record).toEqual(
      expect.objectContaining({ status: 'complete', text: 'Hello again', content: 'half way', operationId: 'op_mid_0123456789abc' }),
    );
    expect(shown(conversation.getSnapshot().items)).toEqual([
      ['user', 'op_mid_0123456789abc', 'half way'],
      ['assistant', TURN, 'complete', 'Hello again'],
    ]);
  });

  it('a row written before messages were stored loads as before: the turn, no user item', async () => {
    const page = stores();
    const firstStore = page();
    const now = Date.now();
    await firstStore.write([{ record: { id: 'turn_old', conversationId: 'conv_old', status: 'complete', lastSeq: 3, createdAt: now, updatedAt: now, endedAt: now, text: 'old answer', actions: [] } }]);
    firstStore.close();
    const client = offlineClient(page(), []);
    const conversation = client.conversation('conv_old');
    await expect.poll(() => shown(conversation.getSnapshot().items)).toEqual([['assistant', 'turn_old', 'complete', 'old answer']]);
  });
});

describe('conversation.resend', () => {
  it('sends the message that started a turn again as a new submission and a new turn, after a reload too', async () => {
    const server = await startTestServer({ agent: textAgent(ANSWER) });
    cleanup.push(() => server.close());
    const store = createMemoryStore();
    const first = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
    const original = first.conversation('conv_resend').send(QUESTION);
    const turn = await original.accepted;
    await turn.completed;
    first.dispose();

    const reloaded = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
    cleanup.push(() => reloaded.dispose());
    const conversation = reloaded.conversation('conv_resend');
    await expect.poll(() => conversation.getSnapshot().items.length).toBe(2);
    const again = conversation.resend(turn.id);
    expect(again.operationId).not.toBe(original.operationId);
    const second = await again.accepted;
    expect(second.id).not.toBe(turn.id);
    expect((await second.completed).text).toBe(ANSWER);
    const listed = await server.log.listTurns('conv_resend', 'anonymous', 10);
    expect(listed.map((t) => t.id).sort()).toEqual([turn.id, second.id].sort());
    // The old turn stays, its user message first; the new pair follows.
    await expect.poll(() => conversation.getSnapshot().items.map((item) => [item.role, item.turn?.id ?? item.content])).toEqual([
      ['user', QUESTION],
      ['assistant', turn.id],
      ['user', QUESTION],
      ['assistant', second.id],
    ]);
  });

  it('refuses a turn whose message it does not know, with invalid_argument', async () => {
    const client = offlineClient(createMemoryStore(), []);
    expect(() => client.conversation('conv_x').resend('unknown_turn')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});
