/**
 * Issue 23, W2: turns adopted from the server's list keep the server's `createdAt` (stored
 * as such), so `client.turns` lists them in creation order, not by random id with one
 * adoption millisecond for all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { LifelineClient } from '../../../src/types.js';
import { buildLog } from './support/scripted-server.js';

const clients: LifelineClient[] = [];
afterEach(() => clients.splice(0).forEach((client) => client.dispose()));

/** Ids in the reverse order of their creation times. */
const TURNS = [
  { id: 'turn_c_oldest', createdAt: '2030-01-01T09:00:00.000Z' },
  { id: 'turn_b_middle', createdAt: '2030-01-01T09:05:00.000Z' },
  { id: 'turn_a_newest', createdAt: '2030-01-01T09:10:00.000Z' },
];

describe('W2: adopted turns keep the server’s createdAt', () => {
  it('client.turns lists adopted turns oldest first, and storage holds the server’s times', async () => {
    const logs = new Map(await Promise.all(TURNS.map(async ({ id }) => [id, await buildLog([`text of ${id}`], { turnId: id, conversationId: 'conv_w2' })] as const)));
    const turnObject = ({ id, createdAt }: (typeof TURNS)[number]) => ({ id, conversationId: 'conv_w2', messageId: `msg_${id}`, status: 'complete', lastSeq: 3, createdAt, updatedAt: createdAt });
    const store = createMemoryStore();
    const client = createLifeline({
      baseUrl: 'http://w2.test/api',
      storage: store,
      fetch: async (input) => {
        const url = new URL(String(input));
        // Newest first, as the protocol lists them.
        if (url.pathname.endsWith('/conversations/conv_w2/turns')) return Response.json({ turns: [...TURNS].reverse().map(turnObject) });
        const turn = TURNS.find(({ id }) => url.pathname.endsWith(`/turns/${id}`));
        if (turn) return Response.json({ turn: turnObject(turn), events: logs.get(turn.id), hasMore: false });
        return new Response(null, { status: 404 });
      },
    });
    clients.push(client);
    await client.recover('conv_w2');
    expect(client.turns.getSnapshot().map((turn) => turn.id)).toEqual(TURNS.map(({ id }) => id));
    await expect
      .poll(async () => (await store.loadTurns({ conversationId: 'conv_w2' })).items.map((row) => [row.id, row.createdAt]).sort())
      .toEqual(TURNS.map(({ id, createdAt }) => [id, Date.parse(createdAt)]).sort());
  });
});
