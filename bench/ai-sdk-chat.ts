/**
 * The AI SDK page (`useChat` over `lifeline-chat/ai-sdk`) in headless Chromium, measured (not
 * asserted): how soon a reloaded page shows and resumes a live answer, and how many
 * network streams one turn costs when a second tab opens the chat. The example server
 * runs the mock model through the real `streamText`; pages load through the fault proxy,
 * which counts the requests.
 *
 *   npm run build && npx tsx bench/ai-sdk-chat.ts [--reloads 5] [--runs 3]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Page } from '@playwright/test';
import { recordChat, serverTurns, type ChatSample } from '../examples/chat/e2e/ai-oracle.js';
import { startExampleServer } from '../examples/chat/server.js';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from '../test/chromium.js';
import { isStreamRequest, startFaultProxy } from '../test/fixtures/fault-proxy.js';
import { fixed, median } from './lib/stats.js';

const { values } = parseArgs({ options: { reloads: { type: 'string', default: '5' }, runs: { type: 'string', default: '3' } } });
const example = fileURLToPath(new URL('../examples/chat/', import.meta.url));

/** Waits in the page until its useChat state satisfies `test` (source of a function of `chat`). */
function waitForChat(page: Page, test: string): Promise<unknown> {
  return page.waitForFunction((source) => {
    const chat = (window as unknown as { lifelineChat?: unknown }).lifelineChat;
    return chat !== undefined && (new Function('chat', `return ${source}`) as (chat: unknown) => boolean)(chat);
  }, test, { timeout: 30_000 });
}
const TEXT_SHOWN = `chat.messages.at(-1)?.role === 'assistant' && chat.messages.at(-1).parts.some((p) => p.type === 'text' && p.text.length >= 20)`;
const SETTLED = `chat.status === 'ready' && chat.messages.at(-1)?.role === 'assistant'`;

const { build } = await import('vite');
await build({ configFile: join(example, 'vite.config.ts'), logLevel: 'error' });
// A slower model than the tests': a turn lasts about 4 s, so each reload lands mid-answer.
const app = await startExampleServer({ port: 0, modelDelayMs: 40, modelWords: 60 });
const proxy = await startFaultProxy({ targetPort: app.port });
const browser = await chromium.launch({ ...(executablePath ? { executablePath } : {}), args: [...CHROMIUM_FLAGS] });
const streamsOf = (turnId: string): number => proxy.requests.filter((r) => isStreamRequest(r) && r.path.includes(`/turns/${turnId}/`)).length;

try {
  // 1. Reload mid-answer: from the reload to (a) the partial answer on screen (from this
  //    device's storage), (b) useChat streaming again (the resumed stream's first chunks),
  //    (c) the first text beyond what the page showed before the reload (live from the server).
  const shown: number[] = [];
  const resumed: number[] = [];
  const fresh: number[] = [];
  // One chat and one reload per run, in a fresh browser context: each reload starts from the same state.
  for (let i = 0; i < Number(values.reloads); i++) {
    const samples: ChatSample[] = [];
    const context = await browser.newContext();
    const page = await context.newPage();
    await recordChat(page, 'reload', samples);
    await page.goto(`${proxy.origin}/ai?c=bench-reload-${i}-${Date.now().toString(36)}`);
    await waitForChat(page, `chat.status === 'ready'`);
    await page.getByRole('textbox', { name: 'Message' }).fill('What is the weather in Bergen?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitForChat(page, TEXT_SHOWN);
    const before = samples.at(-1)?.assistants.at(-1)?.texts.join('').length ?? 0;
    const start = Date.now();
    await page.reload();
    await waitForChat(page, SETTLED);
    const after = samples.filter((s) => s.document >= start && s.assistants.length > 0);
    const answer = (s: ChatSample) => s.assistants.at(-1)!;
    shown.push((after.find((s) => answer(s).types.length > 0)?.at ?? NaN) - start);
    resumed.push((after.find((s) => s.status === 'streaming')?.at ?? NaN) - start);
    fresh.push((after.find((s) => answer(s).texts.join('').length > before)?.at ?? NaN) - start);
    await context.close();
  }
  console.log(`Reload mid-answer (${shown.length} reloads, median ms from page.reload()):`);
  console.log(`  partial answer on screen (from storage): ${fixed(median(shown), 0)}   [${shown.map((v) => fixed(v, 0)).join(', ')}]`);
  console.log(`  useChat streaming again (resumed stream's first chunk): ${fixed(median(resumed), 0)}   [${resumed.map((v) => fixed(v, 0)).join(', ')}]`);
  console.log(`  first new text from the server: ${fixed(median(fresh), 0)}   [${fresh.map((v) => fixed(v, 0)).join(', ')}]`);

  // 2. Two tabs of one browser on one chat, the second opened mid-answer: event-stream
  //    requests per turn, without faults and with one cut.
  for (const cut of [false, true]) {
    const counts: number[] = [];
    for (let run = 0; run < Number(values.runs); run++) {
      const context = await browser.newContext();
      const [a, b] = [await context.newPage(), await context.newPage()];
      const id = `bench-tabs-${run}-${cut ? 'cut' : 'clean'}-${Date.now().toString(36)}`;
      await a.goto(`${proxy.origin}/ai?c=${id}`);
      await waitForChat(a, `chat.status === 'ready'`);
      await a.getByRole('textbox', { name: 'Message' }).fill('Should I pack an umbrella for Lisbon?');
      await a.getByRole('button', { name: 'Send', exact: true }).click();
      await waitForChat(a, `chat.messages.at(-1)?.parts.some((p) => p.type === 'reasoning')`);
      await b.goto(`${proxy.origin}/ai?c=${id}`);
      await waitForChat(b, `chat.status === 'streaming'`);
      if (cut) proxy.resetWhere(isStreamRequest);
      await Promise.all([waitForChat(a, SETTLED), waitForChat(b, SETTLED)]);
      const [turn] = await serverTurns(app.url, id);
      counts.push(streamsOf(turn!.id));
      await context.close();
    }
    console.log(`Two tabs, the second opened mid-answer${cut ? ', one cut' : ''}: event streams per turn ${counts.join(', ')} (${counts.length} runs)`);
  }
} finally {
  await browser.close();
  await proxy.close();
  await app.close();
}
