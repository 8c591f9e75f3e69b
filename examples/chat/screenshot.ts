/**
 * Regenerates `docs/screenshot.png`: the example app in headless Chromium after a plain
 * answer in one conversation and, in another, a weather answer (a reasoning part and a
 * tool call) and a `propose_personas` turn whose stream is cut mid-answer (so the recovery chip and the devtools panel have something to show).
 *
 *   npm run build && npx tsx examples/chat/screenshot.ts [output.png]
 *
 * Needs the app built (`npm start` does it, or `vite build` with examples/chat/vite.config.ts).
 */
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from '../../test/chromium.js';
import { startExampleServer } from './server.js';

const output = process.argv[2] ?? fileURLToPath(new URL('../../docs/screenshot.png', import.meta.url));

async function ask(page: Page, text: string, completeAfter: number): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-message-role="assistant"][data-status="complete"]').length === n, completeAfter, {
    timeout: 30_000,
  });
}

const app = await startExampleServer({ port: 0, tokensPerSecond: 40 });
const browser = await chromium.launch({ ...(executablePath ? { executablePath } : {}), args: [...CHROMIUM_FLAGS] });
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${app.url}/?c=cooking`);
  await ask(page, 'Give me a plan for learning to cook', 1);
  await page.getByRole('button', { name: '+ New conversation' }).click();
  await ask(page, 'How should I plan a product launch?', 1);
  await ask(page, 'What is the weather in Lisbon for the launch?', 2);

  await page.getByRole('textbox', { name: 'Message' }).fill('Propose three personas for our travel booking app');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('[data-action-name="propose_personas"]').waitFor();
  app.lab.cut();
  await page.waitForFunction(() => document.querySelectorAll('[data-message-role="assistant"][data-status="complete"]').length === 3, null, {
    timeout: 30_000,
  });
  // Let the last chips and log lines paint before the picture.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.screenshot({ path: output });
  console.log(`Saved ${output}`);
} finally {
  await browser.close();
  await app.close();
}
