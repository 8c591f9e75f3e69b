/**
 * The durable outbox in real Chromium through the built package and its public path,
 * `client.conversation(id).send(content)`: IndexedDB storage, Web Locks between pages of
 * one context, BroadcastChannel, real online/offline events, and the reference server
 * behind `/api`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect, test, type Page } from '@playwright/test';
import type * as Lifeline from '../../../src/index.js';
import { listAnswerSchema } from '../../../src/protocol/schemas.js';
import { toNodeListener } from '../../../src/server/node/index.js';
import { startTestServer, type TestServer } from '../../fixtures/server.js';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';

interface PageOutbox {
  client: Lifeline.LifelineClient;
  /** Diagnostics as plain JSON (errors through their toJSON). */
  diagnostics: Array<Record<string, unknown> & { type: string }>;
}

declare global {
  interface Window {
    lifeline: typeof Lifeline;
    lifelineReady?: boolean;
    __outbox: PageOutbox;
    __outboxFailures: string[];
  }
}

/** How the API behaves right now. */
type Mode =
  /** Every request's connection is dropped (the server is unreachable). */
  | 'down'
  /** The reference server answers normally. */
  | 'up'
  /** Submissions reach the server and commit, but their answer never leaves. */
  | 'withhold';

interface Post {
  key: string;
  tab: string;
}

let ts: TestServer;
let web: PageServer;
let mode: Mode = 'up';
let posts: Post[] = [];
const withheld = new Set<ServerResponse>();

test.beforeAll(async () => {
  ts = await startTestServer();
  const reference = toNodeListener(ts.handler);
  web = await startPageServer((req: IncomingMessage, res: ServerResponse) => {
    const isSubmit = req.method === 'POST' && (req.url ?? '').endsWith('/messages');
    if (isSubmit) posts.push({ key: String(req.headers['idempotency-key']), tab: String(req.headers['x-tab']) });
    if (mode === 'down') return void req.socket.destroy();
    if (mode === 'withhold' && isSubmit) {
      withheld.add(res);
      res.on('close', () => withheld.delete(res));
      res.writeHead = (() => res) as typeof res.writeHead;
      res.write = (() => true) as typeof res.write;
      res.end = (() => res) as typeof res.end;
    }
    reference(req, res);
  });
});

test.afterAll(async () => {
  await web.close();
  await ts.close();
});

test.beforeEach(() => {
  mode = 'up';
  posts = [];
});

async function turnsOf(conversationId: string): Promise<number> {
  const response = await fetch(`${ts.baseUrl}/conversations/${conversationId}/turns`);
  return listAnswerSchema.parse(await response.json()).turns.length;
}

/** Loads the test page (a fresh document) with an unhandled-rejection log. */
async function open(page: Page): Promise<void> {
  await page.addInitScript(() => {
    window.__outboxFailures = [];
    addEventListener('unhandledrejection', (event) => window.__outboxFailures.push(String(event.reason)));
  });
  await page.goto(web.url);
  await page.waitForFunction(() => window.lifelineReady === true);
}

/** Creates a client over IndexedDB namespace `namespace` and waits until it is ready (outbox loaded). */
async function boot(page: Page, namespace: string, tab: string): Promise<void> {
  await page.evaluate(
    async ({ namespace, tab }) => {
      const diagnostics: PageOutbox['diagnostics'] = [];
      const client = window.lifeline.createLifeline({
        baseUrl: '/api',
        namespace,
        headers: { 'x-tab': tab },
        retry: { initialDelayMs: 50, maxDelayMs: 200 },
        onDiagnostic: (diagnostic) => diagnostics.push(JSON.parse(JSON.stringify(diagnostic)) as PageOutbox['diagnostics'][number]),
      });
      window.__outbox = { client, diagnostics };
      await client.ready;
    },
    { namespace, tab },
  );
}

async function openOutbox(page: Page, namespace: string, tab: string): Promise<void> {
  await open(page);
  await boot(page, namespace, tab);
}

function send(page: Page, conversationId: string, content: string): Promise<string> {
  return page.evaluate(
    ({ conversationId, content }) => window.__outbox.client.conversation(conversationId).send(content).operationId,
    { conversationId, content },
  );
}

/** Diagnostics of `type` (for `retry` and `failed`: of submissions only). */
const countOf = (page: Page, type: string) =>
  page.evaluate((type) => window.__outbox.diagnostics.filter((d) => d.type === type && (d['scope'] ?? 'submit') === 'submit').length, type);
const acceptedOf = (page: Page) =>
  page.evaluate(() =>
    window.__outbox.diagnostics.filter((d) => d.type === 'accepted').map((d) => ({ operationId: d['operationId'], turnId: d['turnId'] })),
  );
const statesOf = (page: Page) => page.evaluate(() => window.__outbox.client.outbox.getSnapshot().map((e) => [e.state, e.attempts]));
const failuresOf = (page: Page) => page.evaluate(() => window.__outboxFailures);

test('sent while the server is down, the page reloads, the server comes back: sent after reload, one turn', async ({ page }) => {
  mode = 'down';
  await openOutbox(page, 'reload', 'first');
  const operationId = await send(page, 'conv-reload', 'typed while the server was down');
  await expect.poll(() => countOf(page, 'retry')).toBeGreaterThanOrEqual(1);
  const retry = await page.evaluate(() => window.__outbox.diagnostics.find((d) => d.type === 'retry'));
  expect(retry).toMatchObject({ scope: 'submit', id: operationId, cause: { code: 'network_error' } });

  await page.reload();
  mode = 'up';
  await page.waitForFunction(() => window.lifelineReady === true);
  await boot(page, 'reload', 'second');
  const replay = await page.evaluate(() => window.__outbox.diagnostics.find((d) => d.type === 'outbox-replay'));
  expect(replay).toMatchObject({ count: 1 });
  await expect.poll(() => acceptedOf(page)).toEqual([{ operationId, turnId: expect.any(String) }]);
  expect(await turnsOf('conv-reload')).toBe(1);
  // The client follows the accepted turn; the message sits before its answer.
  await expect
    .poll(() =>
      page.evaluate(() =>
        window.__outbox.client
          .conversation('conv-reload')
          .getSnapshot()
          .items.map((item) => [item.role, item.role === 'user' ? item.content : item.turn?.status]),
      ),
    )
    .toEqual([
      ['user', 'typed while the server was down'],
      ['assistant', 'complete'],
    ]);
  // Every attempt, before and after the reload, carried the same key.
  expect(new Set(posts.map((p) => p.key))).toEqual(new Set([operationId]));
  expect(posts.filter((p) => p.tab === 'second')).toHaveLength(1);
  expect(await failuresOf(page)).toEqual([]);
});

test('two pages with queued entries: the sending page closes mid-flight, the other sends, one turn per key', async ({ context }) => {
  mode = 'withhold';
  const pageA = await context.newPage();
  const pageB = await context.newPage();
  await openOutbox(pageA, 'tabs', 'a');
  await openOutbox(pageB, 'tabs', 'b');
  const a1 = await send(pageA, 'conv-tabs-a', 'from page a');
  await expect.poll(() => posts.length).toBe(1);
  const b1 = await send(pageB, 'conv-tabs-b', 'from page b');
  // a holds the lock: it also sends b's entry (seen through storage + BroadcastChannel).
  await expect.poll(() => posts.map((p) => `${p.tab}:${p.key}`).sort()).toEqual([`a:${a1}`, `a:${b1}`].sort());
  // Both submissions are committed on the server; their answers never left it.
  await expect.poll(async () => (await turnsOf('conv-tabs-a')) + (await turnsOf('conv-tabs-b'))).toBe(2);
  await expect.poll(() => statesOf(pageB)).toEqual([
    ['sending', 1],
    ['sending', 1],
  ]);

  mode = 'up';
  await pageA.close();
  await expect.poll(() => acceptedOf(pageB).then((list) => list.map((a) => a.operationId).sort())).toEqual([a1, b1].sort());
  const fromB = posts.filter((p) => p.tab === 'b').map((p) => p.key);
  expect(fromB.sort()).toEqual([a1, b1].sort());
  const replayed = await pageB.evaluate(() => window.__outbox.diagnostics.filter((d) => d.type === 'accepted').map((d) => d.replayed));
  expect(replayed).toEqual([true, true]);
  expect(await turnsOf('conv-tabs-a')).toBe(1);
  expect(await turnsOf('conv-tabs-b')).toBe(1);
  expect(await failuresOf(pageB)).toEqual([]);
});

test('offline: no request until the browser is back online, then sent at once', async ({ page, context }) => {
  await openOutbox(page, 'offline', 'only');
  await context.setOffline(true);
  await expect.poll(() => page.evaluate(() => window.__outbox.diagnostics.filter((d) => d.type === 'network').map((d) => d.online))).toEqual([false]);
  const operationId = await send(page, 'conv-offline', 'written offline');
  expect(await statesOf(page)).toEqual([['queued', 0]]);

  await context.setOffline(false);
  await expect.poll(() => acceptedOf(page)).toEqual([{ operationId, turnId: expect.any(String) }]);
  expect(posts.map((p) => p.key)).toEqual([operationId]);
  // An attempt made while offline fails at once in Chromium and would show as a second
  // submit and a retry: exactly one submit and no retry prove nothing went out before online.
  expect(await countOf(page, 'submit')).toBe(1);
  expect(await countOf(page, 'retry')).toBe(0);
  expect(await turnsOf('conv-offline')).toBe(1);
  expect(await failuresOf(page)).toEqual([]);
});
