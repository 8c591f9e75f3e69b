/**
 * Regenerates `docs/support.png`: the `/support` page in headless Chromium with a stuck turn
 * (a `/stuck` message whose `lookup_order` action never answers) and an undelivered one (a
 * `propose_personas` answer whose page closed mid-stream), after a first turn was ended with
 * the End button, so the operator API's answer shows beside the lists.
 *
 *   npm run build && npx tsx examples/chat/support-screenshot.ts [output.png]
 *
 * Needs the app built (`npm start` does it, or `vite build` with examples/chat/vite.config.ts).
 */
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from '../../test/chromium.js';
import { startExampleServer } from './server.js';

const output = process.argv[2] ?? fileURLToPath(new URL('../../docs/support.png', import.meta.url));
const TOKEN = 'screenshot';

async function ask(page: Page, url: string, user: string, conversation: string, text: string, waitFor: string): Promise<void> {
  await page.goto(`${url}/?c=${conversation}&user=${user}`);
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator(waitFor).last().waitFor();
}

const app = await startExampleServer({
  port: 0,
  tokensPerSecond: 40,
  support: { operatorToken: TOKEN, stuckAfterMs: 1000, undeliveredAfterMs: 1000, principalHeader: 'x-example-user' },
});
const browser = await chromium.launch({ ...(executablePath ? { executablePath } : {}), args: [...CHROMIUM_FLAGS] });
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const chat = await context.newPage();
  await ask(chat, app.url, 'maya', 'orders', '/stuck where is order 1042?', '[data-action-name="lookup_order"]');
  await ask(chat, app.url, 'maya', 'refund', '/stuck can I get a refund for order 1042?', '[data-action-name="lookup_order"]');
  await ask(chat, app.url, 'daniel', 'bakery', 'Propose three personas for a night bakery', '[data-action-name="propose_personas"]');
  app.lab.cut();
  await chat.close();

  const page = await context.newPage();
  await page.goto(`${app.url}/support`);
  await page.getByRole('textbox', { name: 'Operator token' }).fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('[data-support-list="stuck"] [data-turn-id]').nth(1).waitFor({ timeout: 20_000 });
  await page.locator('[data-support-list="undelivered"] [data-turn-id] [data-action-json]').waitFor({ timeout: 30_000 });
  const first = page.locator('[data-support-list="stuck"] [data-turn-id]').first();
  await first.getByRole('button', { name: 'End…' }).click();
  await first.getByRole('textbox', { name: 'Reason' }).fill('Order service is down; asked the user to try again later.');
  await first.getByRole('button', { name: 'End turn' }).click();
  await page.locator('[data-last-answer]').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[data-support-list="stuck"] [data-turn-id]').length === 1);
  // Let the last rows paint before the picture.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.screenshot({ path: output, fullPage: true });
  console.log(`Saved ${output}`);
} finally {
  await browser.close();
  await app.close();
}
