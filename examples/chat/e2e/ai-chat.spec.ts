/**
 * The AI SDK page in real Chromium: the real `useChat` from `@ai-sdk/react` over
 * `lifeline-chat/ai-sdk` (the app built from the package's dist/ through its own exports), the
 * mock model through the real `streamText` on the server, every request through the fault
 * proxy. Oracle: see `expectChatMatchesServer`.
 */
import { isStreamRequest } from '../../../test/fixtures/fault-proxy.js';
import { ask, expect, expectChatMatchesServer, streamRequests, test, waitForChat, waitForPart } from './ai-fixtures.js';
import { uniqueConversation } from './fixtures.js';

test('happy path: reasoning, a tool call and text, equal to the AI SDK’s own message, over one stream', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'What is the weather in Bergen?');
  const [turn] = await expectChatMatchesServer(ai, page, chatId, 1);

  const answer = page.locator(`[data-message-role="assistant"][data-message-id="${turn!.id}"]`);
  await expect(answer.locator('[data-part="tool"]')).toHaveAttribute('data-tool-state', 'output-available');
  await expect(answer.locator('[data-part="tool"]')).toContainText('Bergen');
  await expect(answer.locator('[data-part="reasoning"]')).toContainText('weather tool');
  await expect(answer.locator('[data-part="text"]')).toContainText('In Bergen it is');
  await expect(page.locator('[data-chat-status]')).toHaveAttribute('data-chat-status', 'ready');
  expect(streamRequests(ai.proxy, turn!.id)).toBe(1);
});

test('cut mid-turn, in the reasoning and again in the text: repaired inside the stream, useChat never sees it', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Should I pack an umbrella for Lisbon?');
  await waitForPart(page, 'reasoning', 10);
  expect(ai.proxy.resetWhere(isStreamRequest)).toBe(1);
  await waitForPart(page, 'text', 20);
  // The second cut comes from the fault lab's own button (the server destroys the socket).
  await page.getByRole('button', { name: 'Cut stream' }).click();
  await expect(page.getByText('Cut 1 open stream.')).toBeVisible();

  const [turn] = await expectChatMatchesServer(ai, page, chatId, 1);
  expect(streamRequests(ai.proxy, turn!.id)).toBeGreaterThanOrEqual(3);
  expect(ai.samples.every((sample) => sample.status !== 'error')).toBe(true);
  await expect(page.locator('[data-diagnostic="disconnect"]')).toHaveCount(2);
});

test('stall mid-turn: the watchdog notices the silence and the stream goes on', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId, { stallMs: '800' });
  await ask(page, 'Is it warm enough for a swim in Nice?');
  await waitForPart(page, 'text', 10);
  expect(ai.proxy.stallWhere(isStreamRequest)).toBe(1);
  await expect(page.locator('[data-diagnostic="stalled"]').first()).toBeVisible();
  await expectChatMatchesServer(ai, page, chatId, 1);
});

test('server down when sending: the message waits in the outbox, then streams once; one turn on the server', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ai.app.lab.down();
  await ask(page, 'What is the weather in Bergen?');
  await expect(page.locator('.chat-status')).toContainText('sending failed');
  await waitForChat(page, 'submitted');
  await ai.app.lab.up();
  await expectChatMatchesServer(ai, page, chatId, 1);
});

test('reload while the message waits for the server: the reloaded page sends it and useChat shows its answer', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  // The submission's connection is dropped; the page itself still loads.
  ai.proxy.setPlan((request) => (request.method === 'POST' && request.path.endsWith('/messages') ? { kind: 'close' } : { kind: 'pass' }));
  await ask(page, 'Should I pack an umbrella for Lisbon?');
  await expect(page.locator('.chat-status')).toContainText('sending failed');
  await page.reload();
  await expect(page.locator('[data-message-role="user"]')).toHaveCount(1);
  await expect(page.locator('.chat-status')).toContainText('sending failed');
  ai.proxy.setPlan(() => ({ kind: 'pass' }));
  await expectChatMatchesServer(ai, page, chatId, 1);
});
