/**
 * The Next.js example as a user runs it: `next build`, then `next start`, once with the memory
 * log (one process) and once with the Redis log (REDIS_URL), driven in Chromium. A reload mid-answer shows the answer's exact text once;
 * Stop cancels the turn on the server.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test, type Page } from '@playwright/test';
import { readUIMessageStream, type UIMessage } from 'ai';
import { Redis } from 'ioredis';
import { streamAnswer } from '../../chat/ai-model.js';
import { freePort, startRedisServer, type RedisServer } from '../../../test/fixtures/redis.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const nextBin = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const QUESTION = 'What is the weather in Paris?';

let server: ChildProcess | undefined;
let base = '';

/** Resolves once `next start` says it is ready; rejects if it exits first. */
function started(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (data: Buffer) => {
      output += data.toString();
      if (/Ready in/.test(output)) resolve();
    });
    child.stderr?.on('data', (data: Buffer) => (output += data.toString()));
    child.once('exit', (code) => reject(new Error(`next start exited ${code}:\n${output}`)));
  });
}

/** The answer's text as the AI SDK itself builds it from the same mock model. */
async function referenceText(): Promise<string> {
  const question: UIMessage = { id: 'q', role: 'user', parts: [{ type: 'text', text: QUESTION }] };
  let message: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream: await streamAnswer([question], { delayMs: 0 }) })) message = state;
  return (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  await promisify(execFile)(process.execPath, [nextBin, 'build', 'examples/next'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
});

/** `next start` on a free port, with the Redis log when `redisUrl` is given and the memory log otherwise. */
async function startNext(redisUrl: string): Promise<void> {
  const port = await freePort();
  server = spawn(process.execPath, [nextBin, 'start', 'examples/next', '--port', String(port), '--hostname', '127.0.0.1'], {
    cwd: root,
    // Slow enough to reload in the middle of the answer.
    env: { ...process.env, AI_MODEL_DELAY_MS: '60', REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await started(server);
  base = `http://127.0.0.1:${port}`;
}

async function stopNext(): Promise<void> {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
}

async function ask(page: Page, chat: string): Promise<void> {
  await page.goto(`${base}/?chat=${chat}`);
  await page.getByLabel('Message').fill(QUESTION);
  await page.getByRole('button', { name: 'Send' }).click();
  // The answer's text has begun (after the tool step) and is still being written.
  await expect(page.locator('li[data-role="assistant"]')).toContainText('In Paris it is');
}

function chatTests(): void {
  test('send, reload mid-answer: the exact answer once', async ({ page }) => {
    const expected = await referenceText();
    await ask(page, `reload-${Date.now()}`);
    const before = (await page.locator('li[data-role="assistant"]').textContent()) ?? '';
    expect(before.length).toBeLessThan(expected.length);

    await page.reload();
    const assistant = page.locator('li[data-role="assistant"]');
    await expect(assistant).toHaveText(expected);
    await expect(page.locator('main')).toHaveAttribute('data-status', 'ready');
    await expect(assistant).toHaveCount(1);
    await expect(page.locator('li[data-role="user"]')).toHaveText([QUESTION]);
  });

  test('Stop cancels the turn on the server', async ({ page, request }) => {
    const chat = `stop-${Date.now()}`;
    await ask(page, chat);
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect
      .poll(async () => ((await (await request.get(`${base}/api/lifeline/conversations/${chat}/turns`)).json()) as { turns: { status: string }[] }).turns[0]?.status)
      .toBe('cancelled');
    await expect(page.locator('li[data-role="assistant"]')).not.toHaveText(await referenceText());
  });
}

test.describe('the memory log (no REDIS_URL)', () => {
  test.beforeAll(() => startNext(''));
  test.afterAll(stopNext);
  chatTests();
});

test.describe('the Redis log (REDIS_URL set)', () => {
  let redis: RedisServer | undefined;
  test.beforeAll(async () => {
    redis = await startRedisServer();
    await startNext(redis.url);
  });
  test.afterAll(async () => {
    await stopNext();
    await redis?.stop();
  });
  chatTests();

  test('logged the turns in Redis', async () => {
    const client = new Redis(redis!.url);
    try {
      expect((await client.keys('*')).length).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  });
});
