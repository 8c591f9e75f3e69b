/**
 * The client's persistence in real Chromium, through the built package, against the
 * reference server: partial turns survive a reload and a closed tab and show before any
 * network; storage failing (quota, IndexedDB refused) never costs the stream.
 *
 * Submissions are made from the test (plain POSTs to the same server) and the page
 * follows the turn with `client.turn(id)`, so these specs need only the client's
 * follow and storage paths.
 */
import { randomBytes } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { toNodeListener } from '../../../src/server/node/index.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { replayAll, submitMessage, textOf } from '../../fixtures/server.js';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';
import { allFailures, openPage, watchFailures } from './helpers.js';

interface App {
  server: PageServer;
  /** Base URL of the protocol as the test (in Node) reaches it. */
  baseUrl: string;
  errors: unknown[];
  close(): Promise<void>;
}

/** The reference server behind the page server's `/api`: one origin for page and API. */
async function startApp(agent: Agent): Promise<App> {
  const errors: unknown[] = [];
  const handler = createLifelineHandler({ agent, basePath: '/api', onError: (error) => errors.push(error) });
  const server = await startPageServer(toNodeListener(handler, { onError: (error) => errors.push(error) }));
  return {
    server,
    baseUrl: `${server.url}/api`,
    errors,
    async close() {
      await handler.close();
      await server.close();
    },
  };
}

/** Creates the client in the page (kept as `__test.client`) and follows `turnId` (as `__test.turn`). */
async function follow(page: Page, turnId: string, namespace: string): Promise<void> {
  await page.evaluate(
    ({ turnId, namespace }) => {
      const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace });
      window.__test['client'] = client;
      window.__test['turn'] = client.turn(turnId);
    },
    { turnId, namespace },
  );
}

function snapshot(page: Page): Promise<{ text: string; status: string; lastSeq: number }> {
  return page.evaluate(() => {
    const turn = window.__test['turn'] as ReturnType<ReturnType<typeof window.lifeline.createLifeline>['turn']>;
    const { text, status, lastSeq } = turn.getSnapshot();
    return { text, status, lastSeq };
  });
}

/** The text IndexedDB holds for the turn, read through a second connection. */
function storedText(page: Page, turnId: string, namespace: string): Promise<string> {
  return page.evaluate(
    async ({ turnId, namespace }) => {
      const store = window.lifeline.createIndexedDbStore({ namespace });
      try {
        const loaded = await store.loadTurn(turnId);
        if (loaded === undefined) return '';
        return loaded.record.text ?? loaded.events.map((event) => (event.type === 'delta' ? event.text : '')).join('');
      } finally {
        store.close();
      }
    },
    { turnId, namespace },
  );
}

test('reload mid-turn: the partial text shows from storage before any turn request, then the turn completes exactly', async ({ page }) => {
  const agent = controlledAgent();
  const app = await startApp(agent.agent);
  try {
    const pageErrors = watchFailures(page);
    await openPage(page, app.server.url);
    const { turnId } = await submitMessage(app.baseUrl, 'conv_reload', 'hello');
    const control = await agent.nextTurn();
    await control.delta('Hello, ');
    await control.delta('this part was streamed ');
    await follow(page, turnId, 'reload');
    await expect.poll(async () => (await snapshot(page)).text).toBe('Hello, this part was streamed ');
    await expect.poll(() => storedText(page, turnId, 'reload')).toBe('Hello, this part was streamed ');

    // After the reload, every request about the turn is held until the test has looked
    // at what the page shows; what it shows at the first one can only come from storage.
    let shownAtFirstRequest: string | undefined;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/api/turns/**', async (route) => {
      shownAtFirstRequest ??= await page.evaluate(() => (window.__test['shown'] as (() => string) | undefined)?.() ?? '(no client yet)');
      await released;
      await route.continue();
    });
    await page.reload();
    await page.waitForFunction(() => window.lifelineReady === true);
    const afterReady = await page.evaluate(async (turnId) => {
      const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'reload' });
      window.__test['client'] = client;
      window.__test['shown'] = () => client.turns.getSnapshot().find((turn) => turn.id === turnId)?.text ?? '';
      await client.ready;
      window.__test['turn'] = client.turn(turnId);
      return (window.__test['shown'] as () => string)();
    }, turnId);
    expect(afterReady).toBe('Hello, this part was streamed ');
    await expect.poll(() => shownAtFirstRequest).toBe('Hello, this part was streamed ');

    release();
    await control.delta('and this part after the reload.');
    await control.end();
    await expect.poll(async () => (await snapshot(page)).status).toBe('complete');
    const replay = await replayAll(app.baseUrl, turnId);
    expect((await snapshot(page)).text).toBe(textOf(replay.events));
    expect(textOf(replay.events)).toBe('Hello, this part was streamed and this part after the reload.');
    await expect.poll(() => storedText(page, turnId, 'reload')).toBe(textOf(replay.events));
    expect(await allFailures(page, pageErrors)).toEqual([]);
    expect(app.errors).toEqual([]);
  } finally {
    await app.close();
  }
});

test('a closed tab, reopened later: the stored partial shows at once and the turn is recovered', async ({ context }) => {
  const agent = controlledAgent();
  const app = await startApp(agent.agent);
  try {
    const first = await context.newPage();
    await openPage(first, app.server.url);
    const { turnId } = await submitMessage(app.baseUrl, 'conv_closed', 'hello');
    const control = await agent.nextTurn();
    await control.delta('Before the tab closed. ');
    await follow(first, turnId, 'closed');
    await expect.poll(() => storedText(first, turnId, 'closed')).toBe('Before the tab closed. ');
    await first.close();

    // The turn finishes while no tab is open.
    await control.delta('While nobody watched. ');
    await control.delta('The end.');
    await control.end();

    const second = await context.newPage();
    const pageErrors = watchFailures(second);
    await openPage(second, app.server.url);
    const restored = await second.evaluate(async (turnId) => {
      const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'closed' });
      window.__test['client'] = client;
      await client.ready;
      const shown = client.turns.getSnapshot().find((turn) => turn.id === turnId);
      window.__test['turn'] = client.turn(turnId);
      return { text: shown?.text, status: shown?.status };
    }, turnId);
    expect(restored.text).toBe('Before the tab closed. ');
    expect(restored.status).not.toBe('complete');
    await expect.poll(async () => (await snapshot(second)).status).toBe('complete');
    const replay = await replayAll(app.baseUrl, turnId);
    expect((await snapshot(second)).text).toBe(textOf(replay.events));
    expect(textOf(replay.events)).toBe('Before the tab closed. While nobody watched. The end.');
    expect(await allFailures(second, pageErrors)).toEqual([]);
  } finally {
    await app.close();
  }
});

test('quota exhausted mid-stream: the stream goes on in memory, storage degraded exactly once, text exact', async ({ page }) => {
  // 1 MiB of random ASCII (does not compress) in 4 KiB deltas, against a 256 KiB quota.
  const text = randomBytes(768 * 1024).toString('base64');
  const app = await startApp(textAgent(text, { chunk: 4096 }));
  try {
    const pageErrors = watchFailures(page);
    // Chromium reads the quota when the origin's storage is first used: set it before the page loads.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: app.server.url, quotaSize: 256 * 1024 });
    await openPage(page, app.server.url);
    await page.evaluate(() => {
      const statuses: { state: string; cause?: string }[] = [];
      window.__test['statuses'] = statuses;
      window.__test['storageErrors'] = [] as string[];
      const client = window.lifeline.createLifeline({
        baseUrl: '/api',
        namespace: 'quota',
        onDiagnostic: (diagnostic) => {
          if (diagnostic.type === 'storage') statuses.push({ state: diagnostic.status.state, ...(diagnostic.status.cause ? { cause: diagnostic.status.cause.code } : {}) });
          if (diagnostic.type === 'storage-error') (window.__test['storageErrors'] as string[]).push(diagnostic.error.code);
        },
      });
      window.__test['client'] = client;
    });
    const { turnId } = await submitMessage(app.baseUrl, 'conv_quota', 'fill it up');
    await page.evaluate((turnId) => {
      const client = window.__test['client'] as ReturnType<typeof window.lifeline.createLifeline>;
      window.__test['turn'] = client.turn(turnId);
    }, turnId);
    await expect.poll(async () => (await snapshot(page)).status, { timeout: 30_000 }).toBe('complete');
    expect((await snapshot(page)).text).toBe(text);
    const statuses = await page.evaluate(() => window.__test['statuses'] as { state: string; cause?: string }[]);
    expect(statuses.filter((status) => status.state === 'degraded')).toEqual([{ state: 'degraded', cause: 'storage_quota_exceeded' }]);
    expect(await page.evaluate(() => (window.__test['client'] as ReturnType<typeof window.lifeline.createLifeline>).storageStatus.getSnapshot().state)).toBe('degraded');
    expect(await allFailures(page, pageErrors)).toEqual([]);
  } finally {
    await app.close();
  }
});

test('IndexedDB throwing on open: the client runs in memory, says so once, and the turn completes', async ({ page }) => {
  const app = await startApp(textAgent('Memory is enough for this one.'));
  try {
    const pageErrors = watchFailures(page);
    await page.addInitScript(() => {
      IDBFactory.prototype.open = () => {
        throw new DOMException('IndexedDB is disabled in this profile.', 'SecurityError');
      };
    });
    await openPage(page, app.server.url);
    const { turnId } = await submitMessage(app.baseUrl, 'conv_memory', 'hello');
    const statuses = await page.evaluate(async (turnId) => {
      const statuses: { state: string; cause?: string }[] = [];
      const client = window.lifeline.createLifeline({
        baseUrl: '/api',
        namespace: 'memory',
        onDiagnostic: (diagnostic) => {
          if (diagnostic.type === 'storage') statuses.push({ state: diagnostic.status.state, ...(diagnostic.status.cause ? { cause: diagnostic.status.cause.code } : {}) });
        },
      });
      window.__test['client'] = client;
      await client.ready;
      window.__test['turn'] = client.turn(turnId);
      return statuses;
    }, turnId);
    expect(statuses).toEqual([{ state: 'degraded', cause: 'storage_unavailable' }]);
    await expect.poll(async () => (await snapshot(page)).status).toBe('complete');
    expect((await snapshot(page)).text).toBe('Memory is enough for this one.');
    expect(await allFailures(page, pageErrors)).toEqual([]);
  } finally {
    await app.close();
  }
});
