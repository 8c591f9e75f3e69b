/**
 * The outbox against the reference server, over real sockets: connection refused while
 * the server is down, a response lost after the server committed, and rejections.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import { listAnswerSchema } from '../../../src/protocol/schemas.js';
import { toNodeListener, type NodeListener } from '../../../src/server/node/index.js';
import { newKey, startTestServer, submitMessage, type TestServer } from '../../fixtures/server.js';
import { baseDeps, createFakeStorage, createRecorder, type FakeStorage, type TestDeps } from './helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function testServer(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer(options);
  cleanups.push(() => server.close());
  return server;
}

/** Serves `listener` on 127.0.0.1 (`port` 0: ephemeral). */
async function listen(listener: NodeListener, port = 0): Promise<{ server: Server; baseUrl: string; port: number }> {
  const server = createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const actual = (server.address() as AddressInfo).port;
  return { server, port: actual, baseUrl: `http://127.0.0.1:${actual}/api` };
}

/** A port nothing listens on (yet): connecting to it is refused. */
async function reservePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function outbox(baseUrl: string, overrides: TestDeps = {}): { outbox: OutboxController; recorder: ReturnType<typeof createRecorder>; storage: FakeStorage } {
  const storage = (overrides.storage as FakeStorage | undefined) ?? createFakeStorage();
  const recorder = createRecorder();
  const controller = createOutbox(
    baseDeps({
      storage,
      baseUrl,
      emit: recorder.emit,
      random: Math.random,
      acceptedRetentionMs: 0,
      retry: { initialDelayMs: 20, maxDelayMs: 100 },
      ...overrides,
    }),
  );
  cleanups.push(() => controller.dispose());
  return { outbox: controller, recorder, storage };
}

async function turnsOf(baseUrl: string, conversationId: string) {
  const response = await fetch(`${baseUrl}/conversations/${conversationId}/turns`);
  return listAnswerSchema.parse(await response.json()).turns;
}

/** Counts POSTs to the submit endpoint passing through a listener. */
function countPosts(listener: NodeListener): NodeListener & { posts: string[] } {
  const posts: string[] = [];
  return Object.assign(
    (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === 'POST' && (req.url ?? '').endsWith('/messages')) posts.push(String(req.headers['idempotency-key']));
      listener(req, res);
    },
    { posts },
  );
}

describe('outbox against the reference server', () => {
  it('server down (connection refused), then up: sent with the same key, exactly one turn (X1)', async () => {
    const ts = await testServer();
    const port = await reservePort();
    const { outbox: box, recorder, storage } = outbox(`http://127.0.0.1:${port}/api`);
    const { operationId } = box.enqueue('down-then-up', 'hello while the server is down');
    await vi.waitFor(() => expect(recorder.of('retry').length).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    expect(recorder.of('retry').every((d) => d.cause?.code === 'network_error')).toBe(true);

    const listener = countPosts(toNodeListener(ts.handler));
    const up = await listen(listener, port);
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 10_000 });
    expect(recorder.of('accepted')[0]).toMatchObject({ operationId, replayed: false });
    expect(listener.posts).toEqual([operationId]);
    const turns = await turnsOf(up.baseUrl, 'down-then-up');
    expect(turns).toHaveLength(1);
    expect(turns[0]?.id).toBe(recorder.of('accepted')[0]?.turnId);
    // X1: the outbox ends empty.
    await vi.waitFor(() => expect(storage.rows.size + box.entries.getSnapshot().length).toBe(0), { timeout: 5_000 });
  });

  it('accepted, then the response is lost: the retry is answered 200 Idempotent-Replayed, one turn', async () => {
    const ts = await testServer();
    const inner = toNodeListener(ts.handler);
    let cut = 0;
    const listener = countPosts((req, res) => {
      if (req.method === 'POST' && cut === 0) {
        cut += 1;
        // The handler commits the turn before it writes the answer: destroy the socket there.
        res.writeHead = (() => {
          req.socket.destroy();
          return res;
        }) as typeof res.writeHead;
      }
      inner(req, res);
    });
    const { baseUrl } = await listen(listener);
    const { outbox: box, recorder } = outbox(baseUrl);
    const { operationId } = box.enqueue('response-lost', { text: 'hi', n: 1 });
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 10_000 });
    expect(recorder.of('retry')).toHaveLength(1);
    expect(recorder.of('retry')[0]?.cause?.code).toBe('network_error');
    expect(recorder.of('accepted')[0]).toMatchObject({ operationId, replayed: true });
    expect(listener.posts).toEqual([operationId, operationId]);
    const turns = await turnsOf(baseUrl, 'response-lost');
    expect(turns.map((t) => t.id)).toEqual([recorder.of('accepted')[0]?.turnId]);
  });

  it('422 (key reused with another body) fails at once, no retry, no new turn', async () => {
    const ts = await testServer();
    const listener = countPosts(toNodeListener(ts.handler));
    const { baseUrl } = await listen(listener);
    const key = newKey();
    await submitMessage(baseUrl, 'reused', 'the first body', key);
    const storage = createFakeStorage();
    const now = Date.now();
    // An entry a page left behind whose key the server has already seen with another body.
    storage.rows.set(key, { operationId: key, conversationId: 'reused', content: 'another body', createdAt: now, order: now, attempts: 0, nextAttemptAt: now, state: 'queued' });
    const { outbox: box, recorder } = outbox(baseUrl, { storage });
    await box.start();
    await vi.waitFor(() => expect(recorder.of('failed')).toHaveLength(1), { timeout: 10_000 });
    expect(recorder.of('failed')[0]?.error).toMatchObject({ code: 'submission_rejected', status: 422, serverCode: 'idempotency_key_reused' });
    expect(box.entries.getSnapshot()[0]).toMatchObject({ state: 'failed', lastError: { serverCode: 'idempotency_key_reused' } });
    expect(recorder.of('retry')).toHaveLength(0);
    expect(listener.posts).toEqual([key, key]);
    expect(await turnsOf(baseUrl, 'reused')).toHaveLength(1);
  });

  it('413 (body over the server limit) fails at once with payload_too_large', async () => {
    const ts = await testServer({ maxBodyBytes: 32 });
    const listener = countPosts(toNodeListener(ts.handler));
    const { baseUrl } = await listen(listener);
    const { outbox: box, recorder } = outbox(baseUrl);
    box.enqueue('too-large', 'a message longer than thirty-two bytes of JSON');
    await vi.waitFor(() => expect(recorder.of('failed')).toHaveLength(1), { timeout: 10_000 });
    expect(recorder.of('failed')[0]?.error).toMatchObject({ status: 413, serverCode: 'payload_too_large' });
    expect(listener.posts).toHaveLength(1);
    expect(await turnsOf(baseUrl, 'too-large')).toHaveLength(0);
  });
});
