/** Message parts through the whole client: streamed, shown in the snapshot, folded into storage and hydrated. */
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { startTestServer, submitMessage } from '../../fixtures/server.js';
import { FAST_RETRY, follow } from './support/follow.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const agent: Agent = async function* () {
  yield { type: 'part', part: { type: 'reasoning', text: 'Let me think.' } };
  yield { type: 'part', part: { type: 'text-start', id: 't1' } };
  yield { type: 'delta', text: 'Sunny ' };
  yield { type: 'delta', text: 'in Oslo.' };
  yield { type: 'part', part: { type: 'text-end', id: 't1' } };
  yield { type: 'part', part: { type: 'tool-weather', toolCallId: 'c1', input: { city: 'Oslo' }, output: { celsius: 21 } } };
  yield { type: 'delta', text: 'Done.' };
};

const expected = [
  { type: 'reasoning', text: 'Let me think.' },
  { type: 'text', text: 'Sunny in Oslo.', start: { type: 'text-start', id: 't1' }, end: { type: 'text-end', id: 't1' } },
  { type: 'tool-weather', toolCallId: 'c1', input: { city: 'Oslo' }, output: { celsius: 21 } },
  { type: 'text', text: 'Done.' },
];

describe('parts in the client', () => {
  it('shows the parts in the snapshot in order, and restores them from the folded row after a reload', async () => {
    const server = await startTestServer({ agent });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv-parts', 'weather?');
    const followed = follow(server.baseUrl, answer.turnId);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('complete');
    expect(final.parts).toEqual(expected);
    expect(final.text).toBe('Sunny in Oslo.Done.');
    await expect.poll(async () => (await followed.store.loadTurn(answer.turnId))?.record.text).toBe(final.text);
    expect((await followed.store.loadTurn(answer.turnId))?.record.parts).toHaveLength(5);

    // A second page on the same storage, the server gone: the parts come from the folded row.
    await server.close();
    cleanup.pop();
    const reloaded = createLifeline({ baseUrl: server.baseUrl, storage: followed.store, retry: FAST_RETRY });
    cleanup.push(() => reloaded.dispose());
    const restored = await reloaded.turn(answer.turnId).completed;
    expect(restored.parts).toEqual(expected);
  });
});
