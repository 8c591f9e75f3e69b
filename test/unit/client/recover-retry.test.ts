/**
 * `recover()` (also run at start for conversations with unfinished stored turns) retries
 * its list and replay requests like every other request: 503/429 wait with backoff,
 * `Retry-After` honoured, each retry a `retry` diagnostic, and a `failed` give-up only
 * past `retry.maxElapsedMs`. Controlled timers (timer functions and Date only), real network.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { Diagnostic } from '../../../src/types.js';
import { FAST_RETRY, follow } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
});
afterEach(async () => {
  vi.useRealTimers();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

type Overload = { status: 503 | 429; retryAfter: string };

function overloadBody(status: 503 | 429): string {
  return JSON.stringify({ error: { code: status === 503 ? 'overloaded' : 'rate_limited', message: 'scripted overload' } });
}

/** A fetch whose list requests answer `overload(n)` for the n-th list request (0-based) while it returns one. */
function listOverloaded(overload: (index: number) => Overload | undefined): { fetch: typeof fetch; lists: () => number } {
  let lists = 0;
  return {
    lists: () => lists,
    fetch: async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!/\/conversations\/[^/]+\/turns\?/.test(url)) return fetch(input, init);
      const answer = overload(lists++);
      if (answer === undefined) return fetch(input, init);
      return new Response(overloadBody(answer.status), {
        status: answer.status,
        headers: { 'content-type': 'application/json', 'retry-after': answer.retryAfter },
      });
    },
  };
}

function writeOverload(res: ServerResponse, answer: Overload): void {
  res.writeHead(answer.status, { 'content-type': 'application/json', 'retry-after': answer.retryAfter });
  res.end(overloadBody(answer.status));
}

/** A stream that delivers `upTo` events of `log` after the cursor and then holds silent (no end). */
function holdingStream(log: Awaited<ReturnType<typeof buildLog>>, upTo: number) {
  return ({ res, after }: { res: ServerResponse; after: number }) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(log.slice(after, upTo).map(sse).join('') || ': held\n\n');
  };
}

/** Waits until the `count`-th retry diagnostic exists, then lets its delay pass; returns it. */
async function passRetry(diagnostics: Diagnostic[], count: number): Promise<Extract<Diagnostic, { type: 'retry' }>> {
  const retries = () => diagnostics.filter((d): d is Extract<Diagnostic, { type: 'retry' }> => d.type === 'retry');
  await expect.poll(() => retries().length).toBeGreaterThanOrEqual(count);
  const retry = retries()[count - 1]!;
  await vi.advanceTimersByTimeAsync(retry.delayMs);
  return retry;
}

describe('recover() under 503 / 429', () => {
  it('retries the list and the replay with backoff honouring Retry-After; every retry visible, no failure', async () => {
    const log = await buildLog(['Hello ', 'world']);
    const server = await startScriptedServer({
      log,
      stream: holdingStream(log, 2),
      // The replay alongside and the main loop's first replay are overloaded; the next one answers.
      replay: ({ index, res }) => (index < 2 ? writeOverload(res, { status: 503, retryAfter: '1' }) : 'default'),
    });
    cleanup.push(() => server.close());
    const list = listOverloaded((index) => [{ status: 503, retryAfter: '1' } as const, { status: 429, retryAfter: '2' } as const][index]);
    const followed = follow(server.baseUrl, TURN, { fetch: list.fetch });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(2);

    const recovering = followed.client.recover('conv_1');
    const first = await passRetry(followed.diagnostics, 1);
    expect(first).toMatchObject({ scope: 'replay', id: 'conv_1', attempt: 1, cause: expect.objectContaining({ code: 'server_unavailable' }) });
    expect(first.delayMs).toBeGreaterThanOrEqual(1000);
    const second = await passRetry(followed.diagnostics, 2);
    expect(second).toMatchObject({ scope: 'replay', id: 'conv_1', attempt: 2, cause: expect.objectContaining({ code: 'rate_limited' }) });
    expect(second.delayMs).toBeGreaterThanOrEqual(2000);
    // Listed; the replay alongside meets a 503 and hands over to the turn's own replay, which retries it.
    const third = await passRetry(followed.diagnostics, 3);
    expect(third).toMatchObject({ scope: 'replay', id: TURN, attempt: 1, cause: expect.objectContaining({ code: 'server_unavailable' }) });
    expect(third.delayMs).toBeGreaterThanOrEqual(1000);

    const recovered = await recovering;
    expect(recovered.map((snapshot) => snapshot.id)).toEqual([TURN]);
    const final = await followed.turn.completed;
    expect(final).toMatchObject({ status: 'complete', text: 'Hello world' });
    expect(list.lists()).toBe(3);
    expect(server.replays).toHaveLength(3);
    expect(followed.ofType('failed')).toEqual([]);
  });

  it('at start, recovers a stored unfinished turn through an overloaded list', async () => {
    const log = await buildLog(['stored ', 'then ', 'replayed']);
    const server = await startScriptedServer({ log, stream: holdingStream(log, 0) });
    cleanup.push(() => server.close());
    const storage = createMemoryStore();
    await storage.write([{ record: { id: TURN, conversationId: 'conv_1', status: 'streaming', lastSeq: 2, createdAt: 1_000, updatedAt: 1_000 }, chunk: { turnId: TURN, firstSeq: 1, lastSeq: 2, events: log.slice(0, 2) } }]);
    const list = listOverloaded((index) => (index === 0 ? { status: 503, retryAfter: '1' } : undefined));
    const diagnostics: Diagnostic[] = [];
    const client = createLifeline({ baseUrl: server.baseUrl, storage, retry: FAST_RETRY, fetch: list.fetch, onDiagnostic: (d) => diagnostics.push(d) });
    cleanup.push(() => client.dispose());

    const retry = await passRetry(diagnostics, 1);
    expect(retry).toMatchObject({ scope: 'replay', id: 'conv_1', attempt: 1, cause: expect.objectContaining({ code: 'server_unavailable' }) });
    const final = await client.turn(TURN).completed;
    expect(final).toMatchObject({ status: 'complete', text: 'stored then replayed' });
    expect(diagnostics.filter((d) => d.type === 'failed')).toEqual([]);
  });

  it('gives up visibly (retry_exhausted) only past retry.maxElapsedMs, after visible retries', async () => {
    const log = await buildLog(['x']);
    const server = await startScriptedServer({ log, stream: holdingStream(log, 1) });
    cleanup.push(() => server.close());
    const list = listOverloaded(() => ({ status: 503, retryAfter: '1' }));
    const followed = follow(server.baseUrl, TURN, { fetch: list.fetch, retry: { ...FAST_RETRY, maxElapsedMs: 3_500 } });
    cleanup.push(() => followed.client.dispose());

    const outcome = followed.client.recover('conv_1').then(
      () => undefined,
      (error: unknown) => error,
    );
    // Retry-After 1 s three times lands retries at 1, 2 and 3 s, inside the 3.5 s budget; a
    // fourth would land at 4 s, past it (a retry must land before the deadline, core/backoff.ts).
    for (let count = 1; count <= 3; count++) await passRetry(followed.diagnostics, count);
    expect(await outcome).toMatchObject({ code: 'retry_exhausted', cause: expect.objectContaining({ code: 'server_unavailable' }) });
    expect(list.lists()).toBe(4);
    expect(followed.ofType('retry').filter((d) => d.id === 'conv_1').map((d) => d.attempt)).toEqual([1, 2, 3]);
  });
});

describe('recover() revives a turn that failed for a passing reason', () => {
  it('follows a turn whose replay failed on auth again, through a fresh replay, with one completion', async () => {
    const log = await buildLog(['Hello ', 'again']);
    let token = 'revoked';
    const server = await startScriptedServer({
      log,
      // The turn has ended: the stream answers 204, the log has it all.
      stream: ({ res }) => void res.writeHead(204).end(),
      replay: ({ request, res }) => {
        if (request.headers.authorization === 'Bearer fresh') return 'default';
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'unauthorized', message: 'no' } }));
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { headers: () => ({ authorization: `Bearer ${token}` }) });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().status).toBe('failed');
    expect(followed.turn.getSnapshot().error?.code).toBe('unauthorized');
    expect(followed.ofType('auth-refresh')).toHaveLength(1);
    expect(server.replays).toHaveLength(2);

    token = 'fresh';
    const [recovered] = await followed.client.recover('conv_1');
    expect(recovered).toMatchObject({ id: TURN, status: 'complete', text: 'Hello again', recovered: expect.objectContaining({ path: 'replay' }) });
    expect(recovered?.error).toBeUndefined();
    expect(server.replays.map((request) => request.cursor)).toEqual(['0', '0', '0']);
    expect(followed.ofType('recovering')).toHaveLength(2);
    expect(followed.ofType('completed')).toHaveLength(1);
  });
});
