/**
 * Fixtures for the example app's end-to-end tests: a fresh example server per test on an
 * ephemeral port (in-process, so a test can drive the fault lab directly, even while the
 * server refuses connections), a built app (built once with Vite's API when missing or
 * stale), and helpers that read the server's own replay of a turn — the oracle every
 * assertion compares the page with.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test as base, type Locator, type Page } from '@playwright/test';
import { DIST_DIR, startExampleServer, type ExampleServer } from '../server.js';

const exampleDir = fileURLToPath(new URL('..', import.meta.url));
const packageDist = fileURLToPath(new URL('../../../dist/', import.meta.url));

function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = 0;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

/** Where the StrictMode tests' development build of the app goes (React's dev build runs StrictMode's double effects). */
export const DEV_DIST_DIR = fileURLToPath(new URL('../dist-dev/', import.meta.url));

type Flavour = 'production' | 'development';

function appIsFresh(outDir: string): boolean {
  const built = join(outDir, 'ai.html');
  if (!existsSync(built) || !existsSync(join(outDir, 'support.html'))) return false;
  const inputs = Math.max(
    newest(join(exampleDir, 'src')),
    newest(join(exampleDir, 'index.html')),
    newest(join(exampleDir, 'ai.html')),
    newest(join(exampleDir, 'support.html')),
    newest(join(packageDist, 'react')),
    newest(join(packageDist, 'ai-sdk')),
    newest(join(packageDist, 'devtools')),
    newest(join(packageDist, 'index.js')),
  );
  return statSync(built).mtimeMs >= inputs;
}

/** Builds the app unless fresh; a lock directory keeps two workers from building at once. */
export async function ensureAppBuilt(flavour: Flavour = 'production'): Promise<string> {
  if (!existsSync(join(packageDist, 'index.js'))) throw new Error('Build the package first: npm run build');
  const outDir = flavour === 'production' ? DIST_DIR : DEV_DIST_DIR;
  const lock = join(tmpdir(), `lifeline-example-build-${flavour}-${Buffer.from(exampleDir).toString('base64url').slice(-24)}`);
  for (;;) {
    if (appIsFresh(outDir)) return outDir;
    try {
      mkdirSync(lock);
    } catch {
      // Another worker is building: wait for its lock to go, then look again.
      await expect.poll(() => existsSync(lock), { timeout: 120_000 }).toBe(false);
      continue;
    }
    try {
      const { build } = await import('vite');
      await build({
        configFile: join(exampleDir, 'vite.config.ts'),
        logLevel: 'error',
        ...(flavour === 'development' && {
          define: { 'process.env.NODE_ENV': JSON.stringify('development') },
          build: { outDir: DEV_DIST_DIR, minify: false, sourcemap: false },
        }),
      });
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

export interface TurnReplay {
  status: string;
  text: string;
  actions: { callId: string; name: string; status: string; output?: unknown }[];
  events: number;
}

/** The server's replay of a turn (every page of `GET /api/turns/{id}?after=…`), deltas joined. */
export async function replayTurn(app: ExampleServer, turnId: string): Promise<TurnReplay> {
  let after = 0;
  let text = '';
  let status = 'pending';
  let events = 0;
  const actions: TurnReplay['actions'] = [];
  for (;;) {
    const response = await fetch(`${app.url}/api/turns/${turnId}?after=${after}`);
    expect(response.status).toBe(200);
    const page = (await response.json()) as {
      turn: { status: string };
      events: { seq: number; type: string; text?: string; callId?: string; name?: string; status?: string; output?: unknown }[];
      hasMore: boolean;
    };
    status = page.turn.status;
    for (const event of page.events) {
      events += 1;
      after = event.seq;
      if (event.type === 'delta') text += event.text ?? '';
      if (event.type === 'action') actions.push({ callId: event.callId!, name: event.name!, status: event.status!, output: event.output });
    }
    if (!page.hasMore) return { status, text, actions, events };
  }
}

/** The turns the server holds for a conversation (the X1 oracle). */
export async function serverTurns(app: ExampleServer, conversationId: string): Promise<{ id: string; status: string }[]> {
  const response = await fetch(`${app.url}/api/conversations/${conversationId}/turns`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { turns: { id: string; status: string }[] }).turns;
}

/** X1's second half: nothing is left pending or failed in the page's outbox. */
export async function expectOutboxEmpty(page: Page): Promise<void> {
  await expect
    .poll(() =>
      page.evaluate(() => {
        const client = (window as unknown as { lifeline: { outbox: { getSnapshot(): readonly { state: string }[] } } }).lifeline;
        return client.outbox.getSnapshot().filter((entry) => entry.state !== 'accepted').length;
      }),
    )
    .toBe(0);
}

export function uniqueConversation(): string {
  return `e2e-${Math.random().toString(36).slice(2, 10)}`;
}

export async function openChat(page: Page, app: ExampleServer, conversationId: string, query: Record<string, string> = {}): Promise<void> {
  const params = new URLSearchParams({ c: conversationId, ...query });
  await page.goto(`${app.url}/?${params}`);
  await expect(page.locator(`[data-conversation-id="${conversationId}"]`)).toBeVisible();
}

export async function sendMessage(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

/** The newest assistant message that has a turn. */
export function lastTurn(page: Page): Locator {
  return page.locator('[data-message-role="assistant"][data-turn-id]').last();
}

export async function turnText(turn: Locator): Promise<string> {
  return (await turn.locator('[data-turn-text]').textContent()) ?? '';
}

/** Waits until the turn shows at least `chars` characters while still streaming. */
export async function waitForStreaming(turn: Locator, chars = 20): Promise<void> {
  await expect.poll(async () => (await turnText(turn)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(chars);
  await expect(turn).toHaveAttribute('data-status', 'streaming');
}

/**
 * T=: the turn completes and the page's `[data-turn-text]` is byte-identical to the
 * server's replay. Returns the replay for further checks.
 */
export async function expectTurnMatchesServer(app: ExampleServer, turn: Locator, timeout = 30_000): Promise<TurnReplay> {
  await expect(turn).toHaveAttribute('data-status', 'complete', { timeout });
  const turnId = await turn.getAttribute('data-turn-id');
  expect(turnId).toBeTruthy();
  const replay = await replayTurn(app, turnId!);
  expect(replay.status).toBe('complete');
  expect(replay.text.length).toBeGreaterThan(0);
  expect(await turnText(turn)).toBe(replay.text);
  return replay;
}

export const test = base.extend<{ app: ExampleServer }, { appBuilt: void }>({
  appBuilt: [
    async ({}, use) => {
      await ensureAppBuilt();
      await use();
    },
    { scope: 'worker', timeout: 180_000 },
  ],
  app: async ({ appBuilt }, use) => {
    void appBuilt;
    const app = await startExampleServer({ port: 0, tokensPerSecond: 40, restartDownMs: 1500 });
    await use(app);
    await app.close();
  },
});

export { expect };
