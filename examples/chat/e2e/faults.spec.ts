import {
  expect,
  expectOutboxEmpty,
  expectTurnMatchesServer,
  lastTurn,
  openChat,
  replayTurn,
  sendMessage,
  serverTurns,
  test,
  turnText,
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
  const turnId = (await turn.getAttribute('data-turn-id'))!;

  // Recovery requests wait until the screenshot is taken, so it shows the app mid-recovery.
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  await page.route(`**/api/turns/${turnId}**`, async (route) => {
    await gate;
    await route.continue().catch(() => {});
  });
  expect(app.lab.stall()).toBeGreaterThan(0);
  await expect(page.locator('[data-diagnostic="stalled"]').first()).toBeVisible();
  await expect(turn).toHaveAttribute('data-status', /stalled|reconnecting|recovering/);
  const screenshot = await page.screenshot({ path: testInfo.outputPath('mid-recovery.png') });
  await testInfo.attach('mid-recovery', { body: screenshot, contentType: 'image/png' });

  release();
  await expectTurnMatchesServer(app, turn);
});

test('server restart mid-turn: backoff through refused connections, then resume (T=)', async ({ page, app }) => {
  await openChat(page, app, uniqueConversation());
  await sendMessage(page, 'How should I plan a product launch?');
  const turn = lastTurn(page);
  await waitForStreaming(turn);

  // The lab's button: the server answers, drops every connection and refuses new ones for 1.5 s.
  await page.getByRole('button', { name: 'Restart server' }).click();
  await expect(page.locator('[data-diagnostic="retry"]').first()).toBeVisible();
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
  await expectOutboxEmpty(page);
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
  await expectOutboxEmpty(page);
  await expect(page.locator('[data-diagnostic="retry"]').first()).toBeVisible();
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
  await expectOutboxEmpty(page);
});

test('a failed turn keeps its partial text (T=) and Retry sends the message again', async ({ page, app }) => {
  const conversationId = uniqueConversation();
  await openChat(page, app, conversationId);
  await sendMessage(page, '/fail on purpose');
  const failed = lastTurn(page);
  await expect(failed).toHaveAttribute('data-status', 'failed');
  const failedId = (await failed.getAttribute('data-turn-id'))!;
  const replay = await replayTurn(app, failedId);
  expect(replay.status).toBe('failed');
  expect(await turnText(failed)).toBe(replay.text);

  await failed.getByRole('button', { name: 'Retry' }).click();
  await expect(page.locator('[data-message-role="assistant"][data-turn-id]')).toHaveCount(2);
  const retried = lastTurn(page);
  await expect(retried).not.toHaveAttribute('data-turn-id', failedId);
  // The fake agent fails a message only the first time: the retry is answered in full.
  await expectTurnMatchesServer(app, retried);
  expect(await serverTurns(app, conversationId)).toHaveLength(2);
});
