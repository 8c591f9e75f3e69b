/**
 * `conversation.ready` promises the conversation's stored turns in its snapshot before any
 * network. Two ways a stored turn was read after start, with `ready` already resolved: a
 * turn that ended just before a reload can still be unfolded (its row ended, its events in
 * chunks, the fold not yet written); and a turn whose message was accepted seconds before
 * the reload is followed first from the outbox's accepted entry, so the conversation found
 * it held and did not wait. The AI SDK transport's `loadMessages` reads the snapshot right
 * after `ready`: an empty turn there was an answer missing from `useChat`.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import { FAST_RETRY } from './support/follow.js';
import { buildLog, TURN } from './support/scripted-server.js';

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const step of cleanup.reverse()) step();
  cleanup = [];
});

function offline(store: MemoryStore) {
  const requests: string[] = [];
  const client = createLifeline({
    baseUrl: 'http://127.0.0.1:9/api',
    storage: store,
    retry: FAST_RETRY,
    fetch: (input) => (requests.push(String(input)), Promise.reject(new TypeError('offline'))),
  });
  cleanup.push(() => client.dispose());
  return { client, requests };
}

describe('conversation.ready', () => {
  it('holds an ended turn whose stored events are not folded yet, with its text, before any request', async () => {
    const log = await buildLog(['Hel', 'lo'], { conversationId: 'conv_unfolded', status: 'cancelled' });
    const store = createMemoryStore();
    const now = Date.now();
    await store.write([
      {
        record: { id: TURN, conversationId: 'conv_unfolded', content: 'hi', status: 'cancelled', lastSeq: log.length, createdAt: now, updatedAt: now, endedAt: now },
        chunk: { turnId: TURN, firstSeq: 1, lastSeq: log.length, events: log },
      },
    ]);
    const { client, requests } = offline(store);
    const conversation = client.conversation('conv_unfolded');
    await conversation.ready;
    const turn = conversation.getSnapshot().items.find((item) => item.role === 'assistant')?.turn;
    // Its end is still being verified against the text hash; what matters here is that the text is in.
    expect(turn?.text).toBe('Hello');
    expect(requests).toEqual([]);
  });

  it('holds a turn followed from a recently accepted outbox entry, with its stored text', async () => {
    const log = await buildLog(['Hel', 'lo'], { conversationId: 'conv_accepted' });
    const store = createMemoryStore();
    const now = Date.now();
    await store.write([
      {
        record: { id: TURN, conversationId: 'conv_accepted', status: 'complete', lastSeq: log.length, createdAt: now, updatedAt: now, endedAt: now, text: 'Hello', actions: [] },
      },
    ]);
    await store.putOutbox({
      operationId: 'op_accepted_0123456789',
      conversationId: 'conv_accepted',
      content: 'hi',
      createdAt: now,
      order: 1,
      attempts: 1,
      nextAttemptAt: now,
      state: 'accepted',
      turnId: TURN,
      messageId: 'msg_1',
      acceptedAt: now,
    });
    const { client } = offline(store);
    const conversation = client.conversation('conv_accepted');
    await conversation.ready;
    const turn = conversation.getSnapshot().items.find((item) => item.role === 'assistant')?.turn;
    expect([turn?.status, turn?.text]).toEqual(['complete', 'Hello']);
  });
});
