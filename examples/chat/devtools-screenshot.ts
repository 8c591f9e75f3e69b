/**
 * Regenerates `docs/devtools.png`: the devtools panel of the example page in headless Chromium,
 * after an answer whose stream was cut from the panel's own Cut button, and with a second message
 * waiting in the outbox while the page is offline.
 *
 *   npm run build && npx tsx examples/chat/devtools-screenshot.ts [output.png]
 *
 * Needs the app built (`npm start` does it, or `vite build` with examples/chat/vite.config.ts).
 */
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from '../../test/chromium.js';
import { startExampleServer } from './server.js';

const output = process.argv[2] ?? fileURLToPath(new URL('../../docs/devtools.png', import.meta.url));

const app = await startExampleServer({ port: 0, tokensPerSecond: 40 });
const browser = await chromium.launch({ ...(executablePath ? { executablePath } : {}), args: [...CHROMIUM_FLAGS] });
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 2 });
  await page.goto(`${app.url}/?c=devtools`);
  const panel = page.getByRole('complementary', { name: 'Lifeline devtools' });
  const send = async (text: string): Promise<void> => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
  };
  const completed = (n: number) =>
    page.waitForFunction((count) => document.querySelectorAll('[data-message-role="assistant"][data-status="complete"]').length === count, n, { timeout: 30_000 });

  await send('Give me a plan for learning to cook');
  await completed(1);
  await send('How should I plan a product launch?');
  await page.waitForFunction(() => (document.querySelector('[data-message-role="assistant"][data-status="streaming"] [data-turn-text]')?.textContent?.length ?? 0) > 60);
  await panel.getByRole('button', { name: 'Cut' }).click();
  await completed(2);
  await page.getByRole('button', { name: 'Go offline' }).click();
  await send('And a budget for it?');
  await panel.locator('[data-devtools-operation]').waitFor();
  // Let the last rows paint before the picture.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await panel.screenshot({ path: output });
  console.log(`Saved ${output}`);
} finally {
  await browser.close();
  await app.close();
}
