import { expect, expectTurnMatchesServer, lastTurn, openChat, replayTurn, sendMessage, serverTurns, test, turnText, uniqueConversation, waitForStreaming } from './fixtures.js';

test('happy path: a message streams to completion and matches the server', async ({ page, app }) => {
  const conversationId = uniqueConversation();
  await openChat(page, app, conversationId);
  await sendMessage(page, 'How should I plan a product launch?');

  await expect(page.locator('[data-message-role="user"]')).toHaveText(/How should I plan a product launch\?/);
  const turn = lastTurn(page);
  await expectTurnMatchesServer(app, turn);
  await expect(turn.getByText('Complete', { exact: true })).toBeVisible();
  await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'online');
  expect(await serverTurns(app, conversationId)).toHaveLength(1);
});

test('propose_personas: the action card survives a dropped stream', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'Propose three personas for a neighbourhood bakery');
  const turn = lastTurn(page);
  const card = turn.locator('[data-action-name="propose_personas"]');
  await expect(card).toBeVisible();

  expect(app.lab.cut()).toBeGreaterThan(0);
  const replay = await expectTurnMatchesServer(app, turn);

  const completed = replay.actions.find((a) => a.name === 'propose_personas' && a.status === 'completed');
  const names = (completed?.output as { name: string }[]).map((p) => p.name);
  expect(names).toHaveLength(3);
  await expect(card).toHaveAttribute('data-action-status', 'completed');
  await expect(card.locator('[data-persona-name]')).toHaveText(names.map((n) => new RegExp(n)));
});

test('structured parts: reasoning and a tool call show above the answer and survive a dropped stream', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'What is the weather for a picnic in Oslo?');
  const turn = lastTurn(page);
  await expect(turn.locator('[data-part="reasoning"]')).toContainText('weather');
  app.lab.cut();
  await expectTurnMatchesServer(app, turn);
  const tool = turn.locator('[data-part="tool"]');
  await expect(tool).toHaveAttribute('data-tool-name', 'get_weather');
  await expect(tool).toHaveAttribute('data-tool-state', 'output-available');
  await expect(tool).toContainText('sunny');
  await expect(turn.locator('[data-part]')).toHaveCount(2);
});

test('reload mid-stream: the partial text shows from storage before the stream reconnects', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'Give me a plan for learning to cook');
  const turn = lastTurn(page);
  await waitForStreaming(turn, 40);
  const turnId = (await turn.getAttribute('data-turn-id'))!;

  // Hold every request about this turn after the reload, so what shows first can only come from IndexedDB.
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  await page.route(`**/api/turns/${turnId}**`, async (route) => {
    held += 1;
    await gate;
    // A request the page gave up on meanwhile is already settled; continuing it may throw.
    await route.continue().catch(() => {});
  });
  await page.reload();
  const restored = page.locator(`[data-turn-id="${turnId}"]`);
  await expect.poll(async () => (await turnText(restored)).length).toBeGreaterThan(0);
  const partial = await turnText(restored);
  await expect.poll(() => held).toBeGreaterThan(0);

  release();
  const replay = await expectTurnMatchesServer(app, restored);
  expect(replay.text.startsWith(partial)).toBe(true);
});

test('two tabs on one conversation show the same answer', async ({ context, app }) => {
  const conversationId = uniqueConversation();
  const first = await context.newPage();
  const second = await context.newPage();
  await openChat(first, app, conversationId);
  await openChat(second, app, conversationId);

  await sendMessage(first, 'Propose personas for a language learning app');
  const replay = await expectTurnMatchesServer(app, lastTurn(first));
  const turnId = await lastTurn(first).getAttribute('data-turn-id');
  const mirrored = second.locator(`[data-turn-id="${turnId}"]`);
  await expect(mirrored).toHaveAttribute('data-status', 'complete');
  expect(await turnText(mirrored)).toBe(replay.text);
  expect(await serverTurns(app, conversationId)).toHaveLength(1);
  // The second tab never submitted anything of its own.
  expect((await replayTurn(app, turnId!)).status).toBe('complete');
});

test('HTML in messages and answers is shown as text, never run', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  const hostile = 'Tell me about <img src=x onerror="window.__pwned=1"><b>bold</b>';
  await sendMessage(page, hostile);
  await expect(page.locator('[data-message-role="user"]').first()).toContainText(hostile);
  const replay = await expectTurnMatchesServer(app, lastTurn(page));
  expect(replay.text).toContain('<img src=x');
  await expect(page.locator('[data-conversation-id] img, [data-conversation-id] b')).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
});
