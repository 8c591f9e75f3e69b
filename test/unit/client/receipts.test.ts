/**
 * Delivery receipts from the real client to the real reference server (docs/protocol.md
 * section 10): a turn followed to its verified end is recorded `delivered`; a turn cut
 * and never resumed stays undelivered until a page follows it again; a receipt sent while
 * the server is down lands once it is back (and survives a reload meanwhile); a 1.1
 * server's 404 ends receipts quietly; a 409 mismatch rebuilds the turn.
 */
import './support/dom-shim.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isExpiredTurn, type StoredTurn } from '../../../src/server/log/turn-log.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { startTestServer, submitMessage, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';
import { follow, type Followed } from './support/follow.js';

/** The page's `localStorage`, kept across the clients of one test (a reload keeps it too). */
class MemoryStorage {
  readonly #items = new Map<string, string>();
  get length(): number {
    return this.#items.size;
  }
  key(index: number): string | null {
    return [...this.#items.keys()][index] ?? null;
  }
  getItem(key: string): string | null {
    return this.#items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.#items.set(key, value);
  }
  removeItem(key: string): void {
    this.#items.delete(key);
  }
  keys(): string[] {
    return [...this.#items.keys()];
  }
}

let storage: MemoryStorage;
const cleanups: (() => Promise<void> | void)[] = [];
beforeEach(() => {
  storage = new MemoryStorage();
  (globalThis as { localStorage?: unknown }).localStorage = storage;
});
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
  delete (globalThis as { localStorage?: unknown }).localStorage;
});

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const started = await startTestServer(options);
  cleanups.push(() => started.close());
  return started;
}

function client(baseUrl: string, turnId: string, options: Parameters<typeof follow>[2] = {}): Followed {
  const followed = follow(baseUrl, turnId, options);
  cleanups.push(() => followed.client.dispose());
  return followed;
}

async function deliveryOf(s: TestServer, turnId: string): Promise<string | undefined> {
  const turn = await s.log.getTurn(turnId);
  return turn && !isExpiredTurn(turn) ? (turn as StoredTurn).delivery?.state : undefined;
}

/** Counts the receipts that reached the server, by answer status. */
function countingFetch(gate: { down: boolean }): { fetch: typeof fetch; reached: number[] } {
  const reached: number[] = [];
  return {
    reached,
    fetch: async (input, init) => {
      const receipt = String(input instanceof Request ? input.url : input).endsWith('/delivered');
      if (receipt && gate.down) throw new TypeError('fetch failed (server down)');
      const response = await globalThis.fetch(input, init);
      if (receipt) reached.push(response.status);
      return response;
    },
  };
}

describe('delivery receipts', () => {
  it('a turn followed to its end is recorded delivered, with one receipt', async () => {
    const s = await server({ agent: textAgent('All of the answer, delivered.', { chunk: 4 }) });
    const { turnId } = await submitMessage(s.baseUrl, 'conv-1', 'hi');
    const gate = { down: false };
    const counting = countingFetch(gate);
    const followed = client(s.baseUrl, turnId, { fetch: counting.fetch });
    await followed.turn.completed;
    await expect.poll(() => deliveryOf(s, turnId)).toBe('delivered');
    await expect.poll(() => followed.ofType('receipt').map((d) => d.outcome)).toEqual(['delivered']);
    expect(counting.reached).toEqual([200]);
    expect(storage.keys().filter((key) => key.startsWith('lifeline-receipt:'))).toEqual([]);
  });

  it('a turn whose page closed mid-stream stays undelivered until a page follows it again', async () => {
    const agent = controlledAgent();
    const s = await server({ agent: agent.agent });
    const { turnId } = await submitMessage(s.baseUrl, 'conv-2', 'hi');
    const control = await agent.nextTurn();
    const first = client(s.baseUrl, turnId);
    await control.delta('half ');
    await expect.poll(() => first.turn.getSnapshot().text).toBe('half ');
    // The page closes: nothing follows the turn while it ends.
    first.client.dispose();
    await control.delta('and the rest');
    await control.end();
    await waitForTurnEnd(s.log, turnId);
    expect(await deliveryOf(s, turnId)).toBe('pending');
    // The page opens again and follows the turn to its end.
    const again = client(s.baseUrl, turnId);
    expect((await again.turn.completed).text).toBe('half and the rest');
    await expect.poll(() => deliveryOf(s, turnId)).toBe('delivered');
  });

  it('a receipt sent while the server is down lands once it is back, across a reload', async () => {
    const s = await server({ agent: textAgent('Answer during an outage.') });
    const { turnId } = await submitMessage(s.baseUrl, 'conv-3', 'hi');
    const gate = { down: true };
    const counting = countingFetch(gate);
    const first = client(s.baseUrl, turnId, { fetch: counting.fetch });
    await first.turn.completed;
    await expect.poll(() => first.ofType('receipt').filter((d) => d.outcome === 'retry').length).toBeGreaterThan(0);
    expect(storage.keys().filter((key) => key.startsWith('lifeline-receipt:'))).toHaveLength(1);
    // Reload: the old page is gone, its receipt is in storage.
    first.client.dispose();
    gate.down = false;
    const second = client(s.baseUrl, 'unrelated-turn', { fetch: counting.fetch });
    await second.client.ready;
    await expect.poll(() => deliveryOf(s, turnId)).toBe('delivered');
    await expect.poll(() => storage.keys().filter((key) => key.startsWith('lifeline-receipt:'))).toEqual([]);
    expect(counting.reached).toEqual([200]);
  });

  it("ends receipts quietly against a 1.1 server's 404: one diagnostic, no retry", async () => {
    const s = await server({ agent: textAgent('Old server.') });
    const oldServer: typeof fetch = async (input, init) =>
      String(input).endsWith('/delivered')
        ? new Response(JSON.stringify({ error: { code: 'not_found', message: 'No such route.' } }), { status: 404, headers: { 'content-type': 'application/json' } })
        : globalThis.fetch(input, init);
    const one = await submitMessage(s.baseUrl, 'conv-4', 'one');
    const followed = client(s.baseUrl, one.turnId, { fetch: oldServer });
    await followed.turn.completed;
    await expect.poll(() => followed.ofType('receipt').map((d) => d.outcome)).toEqual(['unsupported']);
    const two = await submitMessage(s.baseUrl, 'conv-4', 'two');
    await followed.client.turn(two.turnId).completed;
    expect(followed.ofType('receipt').map((d) => d.outcome)).toEqual(['unsupported']);
    expect(followed.ofType('failed')).toEqual([]);
  });

  it('a 409 delivery_mismatch rebuilds the turn from a full replay, then delivers it', async () => {
    const s = await server({ agent: textAgent('Rebuild me from the log.', { chunk: 5 }) });
    const { turnId } = await submitMessage(s.baseUrl, 'conv-5', 'hi');
    let mismatches = 1;
    const replays: string[] = [];
    const tampering: typeof fetch = async (input, init) => {
      const url = String(input);
      if (url.endsWith('/delivered') && mismatches-- > 0) {
        return new Response(JSON.stringify({ error: { code: 'delivery_mismatch', message: 'differs' } }), { status: 409, headers: { 'content-type': 'application/json' } });
      }
      if (url.includes(`/turns/${turnId}?`)) replays.push(new URL(url).searchParams.get('after') ?? '');
      return globalThis.fetch(input, init);
    };
    const followed = client(s.baseUrl, turnId, { fetch: tampering });
    await followed.turn.completed;
    await expect.poll(() => followed.ofType('receipt').map((d) => d.outcome)).toEqual(['mismatch', 'delivered']);
    expect(replays).toContain('0');
    expect(followed.turn.getSnapshot().text).toBe('Rebuild me from the log.');
    expect(await deliveryOf(s, turnId)).toBe('delivered');
  });
});
