/**
 * The follower registry's boot path: a turn's stored copy is read after `client.ready`, and
 * the app may close and reopen the turn meanwhile. The reopened follower starts at once; the
 * stored copy that lands afterwards must not replace what the running follower holds behind
 * its machine's back (found by the simulator: a reloaded tab holding an ended turn went
 * connect → 204 → replay → connect … without backoff, because its machine never learned
 * the turn had ended).
 */
import './support/dom-shim.js';
import { afterEach, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { Store } from '../../../src/storage/store.js';
import { FAST_RETRY } from './support/follow.js';
import { buildLog, startScriptedServer, TURN } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

it('a turn reopened while its stored ended copy is being read completes once, without a connect ↔ replay loop', async () => {
  const log = await buildLog(['Hel', 'lo']);
  const inner = createMemoryStore();
  // The turn ended and was folded before the reload: one row, its text, no events.
  await inner.write([{ record: { id: TURN, conversationId: 'conv_1', status: 'complete', lastSeq: log.length, createdAt: 1, updatedAt: 1, text: 'Hello', actions: [] } }]);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const store: Store = { ...inner, loadTurn: async (id) => (await gate, inner.loadTurn(id)) };
  // The first stream answers only once the stored copy has landed: it is in flight meanwhile.
  const server = await startScriptedServer({ log, stream: async () => (await gate, 'default' as const) });
  cleanup.push(() => server.close());
  const client = createLifeline({ baseUrl: server.baseUrl, storage: store, retry: FAST_RETRY });
  cleanup.push(() => client.dispose());
  await client.ready;

  // First handle: its boot waits on the gated storage read. Closed, then reopened: the
  // second handle starts the follower while that read is still out.
  client.turn(TURN).close();
  const turn = client.turn(TURN);
  await expect.poll(() => server.streams.length).toBeGreaterThan(0);
  release();

  // Broken, the follower never completes: it loops on requests instead.
  let poll: ReturnType<typeof setInterval> | undefined;
  const looping = new Promise<'looping'>((resolve) => (poll = setInterval(() => server.requests.length > 20 && resolve('looping'), 5)));
  const final = await Promise.race([turn.completed, looping]).finally(() => clearInterval(poll));
  expect(final).toEqual(expect.objectContaining({ status: 'complete', text: 'Hello' }));
  // One stream from seq 0 brings the whole log; no request loop around a turn already ended.
  expect(server.streams.length + server.replays.length).toBeLessThanOrEqual(3);
});
