import type { Locator, Page } from '@playwright/test';
import { startExampleServer, type ExampleServer } from '../server.js';
import { expect, expectTurnMatchesServer, lastTurn, openChat, sendMessage, test, turnText, uniqueConversation, waitForStreaming } from './fixtures.js';

const messageList = (page: Page): Locator => page.getByRole('region', { name: 'Messages' });

/** Pixels between the bottom of the list's content and the bottom of what it shows. */
const distanceFromBottom = (page: Page): Promise<number> =>
  messageList(page).evaluate((box) => Math.round(box.scrollHeight - box.scrollTop - box.clientHeight));

const scrollTop = (page: Page): Promise<number> => messageList(page).evaluate((box) => Math.round(box.scrollTop));

/** The assistant message of the `n`th turn (1-based), once it has its turn id. */
async function nthTurn(page: Page, n: number): Promise<Locator> {
  await expect(page.locator('[data-message-role="assistant"][data-turn-id]')).toHaveCount(n);
  return lastTurn(page);
}

test('the list follows each new message and its streaming answer to the bottom', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  const questions = ['How should I plan a product launch?', 'Give me a plan for learning to cook', 'How would you start on a garden?'];
  for (const [index, question] of questions.entries()) {
    await sendMessage(page, question);
    const turn = await nthTurn(page, index + 1);
    await waitForStreaming(turn);
    // Mid-stream the newest text is what shows.
    await expect.poll(() => distanceFromBottom(page)).toBeLessThanOrEqual(1);
    await expectTurnMatchesServer(app, turn);
    await expect.poll(() => distanceFromBottom(page)).toBeLessThanOrEqual(1);
    await expect(turn.getByText('Complete', { exact: true })).toBeInViewport();
  }
  // Three answers are taller than the list: it did scroll, and nothing offers a jump.
  expect(await scrollTop(page)).toBeGreaterThan(0);
  await expect(page.getByRole('button', { name: 'Jump to latest' })).toHaveCount(0);
});

/** A slower agent and a short window, so one answer (with its action card) overflows the list while it streams. */
const slow = test.extend<{ slowApp: ExampleServer }>({
  slowApp: async ({ appBuilt }, use) => {
    void appBuilt;
    const app = await startExampleServer({ port: 0, tokensPerSecond: 10, restartDownMs: 1500 });
    await use(app);
    await app.close();
  },
});
slow.use({ viewport: { width: 1280, height: 520 } });

slow('scrolled up to read, the list stays put and offers "Jump to latest", which follows again', async ({ page, slowApp: app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'Propose three personas for a neighbourhood bakery');
  const turn = await nthTurn(page, 1);
  await waitForStreaming(turn);
  // The answer outgrows the list while the list keeps following it.
  await expect.poll(() => scrollTop(page), { timeout: 20_000 }).toBeGreaterThan(150);
  expect(await distanceFromBottom(page)).toBeLessThanOrEqual(1);

  const jump = page.getByRole('button', { name: 'Jump to latest' });
  await expect(jump).toHaveCount(0);
  await messageList(page).hover();
  await page.mouse.wheel(0, -300);
  await expect(jump).toBeVisible();
  await expect.poll(() => distanceFromBottom(page)).toBeGreaterThan(100);

  // The answer keeps growing; the reader's place does not move.
  const readingAt = await scrollTop(page);
  const grown = (await turnText(turn)).length + 40;
  await expect.poll(async () => (await turnText(turn)).length).toBeGreaterThanOrEqual(grown);
  await expect(turn).toHaveAttribute('data-status', 'streaming');
  expect(Math.abs((await scrollTop(page)) - readingAt)).toBeLessThanOrEqual(1);

  await jump.click();
  await expect(jump).toHaveCount(0);
  await expect.poll(() => distanceFromBottom(page)).toBeLessThanOrEqual(1);
  // Following again, to the end of the answer.
  await expectTurnMatchesServer(app, turn);
  await expect.poll(() => distanceFromBottom(page)).toBeLessThanOrEqual(1);
  await expect(turn.getByText('Complete', { exact: true })).toBeInViewport();
});
