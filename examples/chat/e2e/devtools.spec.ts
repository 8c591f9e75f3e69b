/**
 * `lifeline-chat/devtools` in the example page, in Chromium: the panel follows a turn through a cut
 * set off from its own button (the reconnect held back by the test, so the phase it shows can be
 * read without a race), rebuilds the ended turn on Replay (T= after), and lists a submission
 * waiting in the outbox while the page is offline.
 */
import { expectTurnMatchesServer, expect, lastTurn, openChat, sendMessage, test, uniqueConversation, waitForStreaming } from './fixtures.js';

test('the devtools panel: a turn’s phase through a cut, a replay, an outbox entry', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  const panel = page.getByRole('complementary', { name: 'Lifeline devtools' });
  await sendMessage(page, 'How should I plan a product launch?');
  const turn = lastTurn(page);
  await waitForStreaming(turn);
  const turnId = (await turn.getAttribute('data-turn-id'))!;
  const row = panel.locator(`[data-devtools-turn="${turnId}"]`);
  await expect(row).toHaveAttribute('data-devtools-status', 'streaming');
  await expect(row).toHaveAttribute('data-devtools-connection', 'open');

  // The reconnect waits at the gate: a route added now leaves the open stream alone.
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  await page.route(`**/api/turns/${turnId}/events**`, async (route) => {
    await gate;
    await route.continue().catch(() => {});
  });
  const timeline = panel.getByRole('list', { name: `Timeline of turn ${turnId}` });
  await panel.getByRole('button', { name: 'Cut' }).click();
  await expect(panel.getByRole('status')).toHaveText('cut: done, watch the timeline');
  await expect(row).toHaveAttribute('data-devtools-connection', 'connecting');
  await expect(timeline.locator('[data-diagnostic="disconnect"]')).toContainText('Cut by client.drill.');
  release();
  await expect(timeline.locator('[data-diagnostic="resumed"]')).toBeVisible();
  await expectTurnMatchesServer(app, turn);
  await expect(row).toHaveAttribute('data-devtools-status', 'complete');
  await page.unroute(`**/api/turns/${turnId}/events**`);

  // Replay an ended turn: rebuilt from seq 0 and verified again, the same text on the page.
  await panel.getByRole('button', { name: 'Replay' }).click();
  await expect(timeline.locator('[data-diagnostic="completed"]')).toHaveCount(2);
  await expect(timeline.locator('[data-diagnostic="recovering"]')).toContainText('after seq 0');
  await expectTurnMatchesServer(app, turn);

  // Offline: the next message waits in the outbox, and the panel lists it.
  await page.getByRole('button', { name: 'Go offline' }).click();
  await sendMessage(page, 'Give me a plan for learning to cook');
  const outbox = panel.getByRole('region', { name: 'Outbox' });
  const entry = outbox.locator('[data-devtools-operation]');
  await expect(entry).toHaveCount(1);
  await expect(entry).toHaveAttribute('data-devtools-state', 'queued');
  // Offline, the outbox does not even try (docs/faults.md row 18).
  await expect(entry).toContainText('attempts 0');
  await page.getByRole('button', { name: 'Go back online' }).click();
  await expect(entry).toHaveCount(0);
  // The new answer, told apart from the first by its id: a bare `last()` resolves again on
  // every use and could still find the first answer before the new one renders.
  const next = page.locator(`[data-message-role="assistant"][data-turn-id]:not([data-turn-id="${turnId}"])`);
  await expect(next).toHaveCount(1);
  await expectTurnMatchesServer(app, next);
  // Its turn's timeline starts with the submission's story.
  const nextTimeline = panel.getByRole('list', { name: `Timeline of turn ${await next.getAttribute('data-turn-id')}` });
  await expect(nextTimeline.locator('[data-diagnostic="submit"]')).toHaveCount(1);
  await expect(nextTimeline.locator('[data-diagnostic="accepted"]')).toHaveCount(1);
});
