import {
  expect,
  expectTurnMatchesServer,
  lastTurn,
  openChat,
  sendMessage,
  serverTurns,
  test,
  uniqueConversation,
  waitForStreaming,
} from './fixtures.js';

test('cut mid-stream: the client reconnects and the text is byte-identical (T=)', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'How should I plan a product launch?');
  const turn = lastTurn(page);
  await waitForStreaming(turn);

  expect(app.lab.cut()).toBeGreaterThan(0);
  await expect(page.locator('[data-diagnostic="disconnect"]').first()).toBeVisible();
  await expectTurnMatchesServer(app, turn);
});

test('stall then recovery: the watchdog notices the silence and the turn completes (T=)', async ({ page, app }, testInfo) => {
  await openChat(page, app, uniqueConversation(), { stallMs: '1500' });
  await sendMessage(page, 'Give me a plan for learning to cook');
  const turn = lastTurn(page);
  await waitForStreaming(turn);

  expect(app.lab.stall()).toBeGreaterThan(0);
  await expect(page.locator('[data-diagnostic="stalled"]').first()).toBeVisible();
  const screenshot = await page.screenshot({ path: testInfo.outputPath('mid-recovery.png') });
  await testInfo.attach('mid-recovery', { body: screenshot, contentType: 'image/png' });

  await expectTurnMatchesServer(app, turn);
});

test('server restart mid-turn: backoff through refused connections, then resume (T=)', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'How should I plan a product launch?');
  const turn = lastTurn(page);
  await waitForStreaming(turn);

  await app.lab.down();
  await expect(page.locator('[data-diagnostic="retry"]').first()).toBeVisible();
  await app.lab.up();
  await expectTurnMatchesServer(app, turn);
});

test('send while the server is down, then up: one turn per message (X1)', async ({ page, app }) => {
  const conversationId = uniqueConversation();
  await openChat(page, app, conversationId);
  await app.lab.down();
  await sendMessage(page, 'Give me a plan for learning to cook');

  const placeholder = page.locator('[data-message-role="assistant"]').last();
  await expect(placeholder).toHaveAttribute('data-status', /queued|sending/);
  await expect(page.locator('[data-diagnostic="retry"]').first()).toBeVisible();
  await app.lab.up();

  await expectTurnMatchesServer(app, lastTurn(page));
  expect(await serverTurns(app, conversationId)).toHaveLength(1);
  await expect(page.locator('[data-message-role="assistant"]')).toHaveCount(1);
  await expect(page.locator('[data-message-role="user"]')).toHaveCount(1);
});

test('503 with Retry-After on submit: retried with the same key, one turn (X1)', async ({ page, app }) => {
  const conversationId = uniqueConversation();
  await openChat(page, app, conversationId);
  app.lab.failSubmissions(2);
  await sendMessage(page, 'How should I plan a product launch?');

  await expectTurnMatchesServer(app, lastTurn(page));
  expect(app.lab.state().failNextSubmissions).toBe(0);
  expect(await serverTurns(app, conversationId)).toHaveLength(1);
});

test('offline from the fault lab: the message waits, then goes out once online (X1)', async ({ page, app }) => {
  const conversationId = uniqueConversation();
  await openChat(page, app, conversationId);
  await page.getByRole('button', { name: 'Go offline' }).click();
  await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'offline');
  await sendMessage(page, 'Give me a plan for learning to cook');
  await expect(page.locator('[data-message-role="assistant"]').last()).toHaveAttribute('data-status', /queued|sending/);
  expect(await serverTurns(app, conversationId)).toHaveLength(0);

  await page.getByRole('button', { name: 'Go back online' }).click();
  await expectTurnMatchesServer(app, lastTurn(page));
  expect(await serverTurns(app, conversationId)).toHaveLength(1);
});
