/**
 * Issue 23, H1: against a server that accepts and never answers, `client.recover()` (its
 * list request), `turn.cancel()` and a live turn's `completed` must not stay pending: each
 * request has a time limit, and every promise the API returned settles at once after
 * `dispose()`.
 */
import './support/dom-shim.js';
import { setImmediate as macrotask } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { buildLog, sse, TURN } from './support/scripted-server.js';
import type { LifelineClient, LifelineOptions } from '../../../src/types.js';

let clients: LifelineClient[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const client of clients) client.dispose();
  clients = [];
});

/** A fetch whose every request hangs (until aborted, as a real fetch), but the event stream: it sends turn.start, then silence. */
function hangingServer(): { fetch: typeof fetch; requests: string[] } {
  const requests: string[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const url = String(input);
    requests.push(url);
    if (url.endsWith('/events')) {
      const [start] = await buildLog([]);
      const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new TextEncoder().encode(sse(start!))) });
      init?.signal?.addEventListener('abort', () => body.cancel().catch(() => undefined));
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    }
    return new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
  };
  return { fetch, requests };
}

function client(options: Partial<LifelineOptions> = {}): LifelineClient {
  const created = createLifeline({ baseUrl: 'http://hangs.test/api', storage: 'memory', retry: { initialDelayMs: 10, maxDelayMs: 100, maxElapsedMs: 5_000 }, ...options });
  clients.push(created);
  return created;
}

/** The promise's outcome after the tasks queued now have run: at once, not after some timer. */
async function outcomeSoon<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown } | 'pending'> {
  const outcome = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  for (let i = 0; i < 20; i++) await macrotask();
  return Promise.race([outcome, Promise.resolve('pending' as const)]);
}

describe('H1: nothing the API returns stays pending', () => {
  it('recover(), cancel() and a live turn’s completed settle at once after dispose(), with typed errors', async () => {
    const server = hangingServer();
    const lifeline = client({ fetch: server.fetch });
    const turn = lifeline.turn(TURN);
    await vi.waitFor(() => expect(turn.getSnapshot().status).toBe('pending'));
    await vi.waitFor(() => expect(server.requests.some((url) => url.endsWith('/events'))).toBe(true));
    const recovered = lifeline.recover('conv_1');
    const cancelled = turn.cancel();
    const completed = turn.completed;
    // Observed one after the other below: handled now, so none counts as unhandled meanwhile.
    for (const promise of [recovered, cancelled]) promise.catch(() => undefined);
    await vi.waitFor(() => expect(server.requests.some((url) => url.endsWith('/cancel'))).toBe(true));
    expect(await outcomeSoon(recovered)).toBe('pending');
    lifeline.dispose();
    expect(await outcomeSoon(recovered)).toEqual({ error: expect.objectContaining({ code: 'disposed' }) });
    expect(await outcomeSoon(cancelled)).toEqual({ error: expect.objectContaining({ code: 'disposed' }) });
    expect(await outcomeSoon(completed)).toEqual({ value: expect.objectContaining({ status: 'failed', error: expect.objectContaining({ code: 'disposed' }) }) });
    expect(await outcomeSoon(lifeline.ready)).toEqual({ value: undefined });
  });

  it('a list request that never answers is timed out and retried, then recover() rejects retry_exhausted within the budget', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const server = hangingServer();
    const lifeline = client({ fetch: server.fetch, stall: { firstEventMs: 1_000 } });
    const recovered = lifeline.recover('conv_1');
    recovered.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await outcomeSoon(recovered)).toEqual({ error: expect.objectContaining({ code: 'retry_exhausted' }) });
    expect(server.requests.filter((url) => url.includes('/conversations/conv_1/turns')).length).toBeGreaterThan(1);
  });

  it('turn.cancel() against a server that never answers rejects timeout after stall.firstEventMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    const server = hangingServer();
    const lifeline = client({ fetch: server.fetch, stall: { firstEventMs: 1_000, idleMs: 60_000 } });
    const cancelled = lifeline.turn(TURN).cancel();
    cancelled.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(999);
    expect(await outcomeSoon(cancelled)).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcomeSoon(cancelled)).toEqual({ error: expect.objectContaining({ code: 'timeout' }) });
  });
});
