/**
 * Issue 23, W4 (docs/faults.md row 46): an event of an unknown type is stored and relayed
 * like any event and skipped only for display. Skipping it outright left a hole in storage
 * (a reload loaded only up to it and reported `storage_corrupt_record`) and made every
 * watching tab replay once per unknown event.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { follow } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN, type ScriptedServer } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
  vi.unstubAllGlobals();
});

/** Exclusive Web Locks in request order (tabs.test.ts has the same stand-in). */
function fakeLocks() {
  const tails = new Map<string, Promise<unknown>>();
  return {
    request(name: string, options: { signal?: AbortSignal }, callback: () => unknown): Promise<unknown> {
      const result = (tails.get(name) ?? Promise.resolve()).then(() => {
        if (options.signal?.aborted) throw new DOMException('Withdrawn.', 'AbortError');
        return callback();
      });
      tails.set(name, result.catch(() => {}));
      return result;
    },
  };
}

/** turn.start, "one ", an event of a type from a newer protocol (seq 3), "two"; then the stream stays open. `gated`: the first stream waits for `release()`. */
async function serverWithUnknownEvent(gated = false): Promise<{ server: ScriptedServer; release(): void }> {
  const [start, one, two] = await buildLog(['one ', 'two']);
  const unknown = { turnId: TURN, seq: 3, type: 'x.future', payload: { note: 'from a newer server' } } as unknown as TurnEvent;
  const log = [start!, one!, unknown, { ...two!, seq: 4 }];
  let gate = gated ? undefined : () => {};
  const opened: (() => void)[] = [];
  const server = await startScriptedServer({
    log,
    stream: ({ res, after }: { res: ServerResponse; after: number }) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (): void => void res.write(log.filter((event) => event.seq > after).map(sse).join(''));
      if (gate) send();
      else opened.push(send);
    },
  });
  cleanup.push(() => server.close());
  return { server, release: () => ((gate = () => {}), opened.splice(0).forEach((send) => send())) };
}

describe('W4: an unknown event is stored and relayed, skipped only for display', () => {
  it('storage holds every seq, the unknown one included: a reload loads the whole turn, nothing reported corrupt', async () => {
    const { server } = await serverWithUnknownEvent();
    const first = follow(server.baseUrl, TURN);
    cleanup.push(() => first.client.dispose());
    await vi.waitFor(() => expect(first.turn.getSnapshot().text).toBe('one two'));
    expect(first.ofType('unknown-event')).toEqual([expect.objectContaining({ eventType: 'x.future' })]);
    expect(first.applied).toEqual([1, 2, 4]);
    await vi.waitFor(async () => expect((await first.store.loadTurn(TURN))?.events.map((event) => event.seq)).toEqual([1, 2, 3, 4]));
    first.client.dispose();

    // The reload, on the same storage: the turn comes back whole, from seq 4 on.
    const reloaded = follow(server.baseUrl, TURN, { storage: first.store });
    cleanup.push(() => reloaded.client.dispose());
    await reloaded.client.ready;
    await vi.waitFor(() => expect(server.streams.at(-1)?.cursor).toBe('4'));
    expect(reloaded.turn.getSnapshot().text).toBe('one two');
    expect(reloaded.ofType('storage-error')).toEqual([]);
  });

  it('a watching tab gets the unknown event relayed: no gap, no replay', async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks() });
    const { server, release } = await serverWithUnknownEvent(true);
    const leader = follow(server.baseUrl, TURN, { namespace: 'w4' });
    const watcher = follow(server.baseUrl, TURN, { namespace: 'w4' });
    cleanup.push(() => leader.client.dispose(), () => watcher.client.dispose());
    await vi.waitFor(() => expect(leader.ofType('shared')).toEqual([expect.objectContaining({ role: 'leader' })]));
    await vi.waitFor(() => expect(server.streams).toHaveLength(1));
    // Both tabs joined (their hellos crossed on the channel) before anything arrives.
    await vi.waitFor(() => expect(watcher.turn.getSnapshot().connection.state).toBe('idle'));
    release();
    await vi.waitFor(() => expect(watcher.turn.getSnapshot().text).toBe('one two'));
    expect(watcher.applied).toEqual([1, 2, 4]);
    expect(watcher.ofType('gap')).toEqual([]);
    expect(server.replays).toEqual([]);
    expect(server.streams).toHaveLength(1);
    await vi.waitFor(async () => expect((await watcher.store.loadTurn(TURN))?.events.map((event) => event.seq)).toEqual([1, 2, 3, 4]));
  });
});
