/**
 * The AI page's tools in real Chromium: the real `useChat` (`onToolCall`, `addToolOutput`,
 * `addToolApprovalResponse`, `sendAutomaticallyWhen`, `regenerate`, per-request data) over
 * `lifeline-chat/ai-sdk`, the tools model through the real `streamText` on the server, every request
 * through the fault proxy. Oracle: `expectToolChat` (the AI SDK's own `DefaultChatTransport`
 * over a plain route with the same model, run in the same test; no render with a duplicate).
 */
import type { Page } from '@playwright/test';
import { BREAK_MESSAGE } from '../ai-tools-model.js';
import { chatState, serverTurns } from './ai-oracle.js';
import { ask, expect, expectToolChat, streamRequests, test, waitForChat, waitForPart } from './ai-fixtures.js';
import { uniqueConversation } from './fixtures.js';

/** The state of the newest assistant message's tool call named `name`, as useChat holds it. */
async function toolState(page: Page, name: string): Promise<string | undefined> {
  const { messages } = await chatState(page);
  const part = messages.at(-1)?.parts.find((candidate) => candidate.type === `tool-${name}`);
  return part && 'state' in part ? String(part.state) : undefined;
}

const lastText = async (page: Page): Promise<string> =>
  ((await chatState(page)).messages.at(-1)?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');

/**
 * Waits until useChat is ready with a last answer starting `prefix`. A short answer's
 * `streaming` state may pass between two looks at the page: this waits for what it shows.
 */
async function answered(page: Page, prefix: string): Promise<void> {
  await expect.poll(async () => (await chatState(page)).status === 'ready' && (await lastText(page)).startsWith(prefix)).toBe(true);
}

test('a client tool answered automatically: onToolCall answers, useChat continues the same message in one continuation', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Where am I?');
  await expect.poll(() => lastText(page)).toContain('You are in Bergen');
  const [first, continuation] = await expectToolChat(ai, page, chatId, ['complete', 'complete']);
  // The continuation submitted the answered assistant message itself (docs/protocol.md §9).
  expect(continuation!.content).toMatchObject({ id: first!.id, role: 'assistant' });
  expect(await toolState(page, 'locate')).toBe('output-available');
  await expect(page.locator('[data-part="tool"][data-tool-name="locate"]')).toContainText('Bergen');
});

test('a client tool answered by a click after a reload, then again from a second tab: one continuation', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await page.getByLabel(/Answer locate automatically/).uncheck();
  await ask(page, 'Where am I?');
  await expect.poll(() => toolState(page, 'locate')).toBe('input-available');
  await waitForChat(page, 'ready');
  await page.reload();
  await waitForChat(page);
  // The waiting call came back from storage: the page asks again (onToolCall ran before the reload).
  await expect(page.getByRole('button', { name: 'Share Oslo' })).toBeVisible();
  const second = await page.context().newPage();
  await ai.open(second, chatId);
  await expect(second.getByRole('button', { name: 'Share Oslo' })).toBeVisible();

  await page.getByRole('button', { name: 'Share Oslo' }).click();
  await expect.poll(() => lastText(page)).toContain('You are in Oslo');
  // The second tab still shows the call waiting; its answer is the same one, under the same key.
  await second.getByRole('button', { name: 'Share Oslo' }).click();
  await expect.poll(() => lastText(second)).toContain('You are in Oslo');
  const turns = await expectToolChat(ai, page, chatId, ['complete', 'complete']);
  await expectToolChat(ai, second, chatId, ['complete', 'complete']);
  expect((await serverTurns(ai.app.url, chatId)).map((turn) => turn.id)).toEqual(turns.map((turn) => turn.id));
});

test('approvals: an approved transfer runs execute once on the server, a denied one never', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Transfer 5 to Bob');
  await page.getByRole('button', { name: 'Approve' }).click();
  await expect.poll(() => lastText(page)).toContain('Sent 5 to Bob');
  await waitForChat(page, 'ready');
  expect(ai.app.transfers()).toBe(1);

  await ask(page, 'Transfer 5 to Bob again');
  await page.getByRole('button', { name: 'Deny' }).click();
  await expect.poll(() => lastText(page)).toContain('I did not send it.');
  await expectToolChat(ai, page, chatId, ['complete', 'complete', 'complete', 'complete']);
  expect(await toolState(page, 'transfer')).toBe('output-denied');
  expect(ai.app.transfers()).toBe(1);
});

test('a cut and a reload during a continuation: it resumes into the same message, equal to the reference, executed once', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Transfer 5 to Bob');
  await page.getByRole('button', { name: 'Approve' }).click();
  await waitForPart(page, 'text', 15);
  expect(ai.proxy.resetWhere((request) => request.method === 'GET' && request.path.includes('/events'))).toBeGreaterThanOrEqual(1);
  await waitForPart(page, 'text', 40);
  const followed = ai.proxy.requests.filter((request) => request.method === 'GET' && request.path.includes('/events')).length;
  await page.reload();
  // No chunk carries an approval's decision: the message useChat rebuilds from the resumed
  // stream shows the transfer done, without `approval.approved` (the reload after it has it).
  const [first, continuation] = await expectToolChat(ai, page, chatId, ['complete', 'complete'], { resumedApproval: true });
  expect(ai.app.transfers()).toBe(1);
  // Followed again after the cut, and after the reload (it was still live then).
  expect(streamRequests(ai.proxy, continuation!.id)).toBeGreaterThanOrEqual(3);
  expect(ai.proxy.requests.filter((request) => request.method === 'GET' && request.path.includes('/events')).length).toBeGreaterThan(followed);
  expect((await chatState(page)).messages.map((message) => message.id)).toEqual([first!.content.id, first!.id]);
  // A reload once it ended: the message from storage, decision included.
  await page.reload();
  await expectToolChat(ai, page, chatId, ['complete', 'complete']);
});

test('per-request body, metadata and headers reach the agent', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Hello');
  await expect.poll(() => lastText(page)).toBe('Hello. You sent {"body":{"model":"mock-tools"},"metadata":{"page":"ai"}} as demo.');
  await expectToolChat(ai, page, chatId, ['complete']);
});

test('regenerate: a new turn for the same user message replaces its answer', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Hello');
  await answered(page, 'Hello.');
  await page.getByRole('button', { name: 'Regenerate' }).click();
  const [first, again] = await expectToolChat(ai, page, chatId, ['complete', 'complete']);
  expect(again!.content).toEqual(first!.content);
  expect((await chatState(page)).messages.map((message) => message.id)).toEqual([first!.content.id, again!.id]);
});

test('a failed turn shows its error, and again after a reload', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Break it');
  await expect(page.locator('.chat-status')).toContainText(BREAK_MESSAGE);
  await expectToolChat(ai, page, chatId, ['failed'], { status: 'error' });
  await page.reload();
  await expect(page.locator('.chat-status')).toContainText(BREAK_MESSAGE);
  await expectToolChat(ai, page, chatId, ['failed'], { status: 'error' });
});

test.describe('a long answer (about 5 s), to stop it after a reload', () => {
  test.use({ modelWords: 400 });

  test('Stop after a reload cancels the turn, and it is never resumed again', async ({ page, ai }) => {
    const chatId = uniqueConversation();
    await ai.open(page, chatId);
    await ask(page, 'What is the weather in Bergen?');
    await waitForPart(page, 'text', 10);
    await page.reload();
    await waitForChat(page, 'streaming');
    await page.getByRole('button', { name: 'Stop' }).click();
    await waitForChat(page, 'ready');
    await expect.poll(async () => (await serverTurns(ai.app.url, chatId)).map((turn) => turn.status)).toEqual(['cancelled']);
    const [stopped] = await serverTurns(ai.app.url, chatId);
    const streams = streamRequests(ai.proxy, stopped!.id);
    const shown = await lastText(page);

    await page.reload();
    await waitForChat(page);
    // A new question answers after any resume would have started; the stopped turn stays as it stopped.
    await ask(page, 'Hello');
    await answered(page, 'Hello.');
    expect(streamRequests(ai.proxy, stopped!.id)).toBe(streams);
    const { messages } = await chatState(page);
    expect(messages).toHaveLength(4);
    expect(messages[1]!.id).toBe(stopped!.id);
    expect(messages[1]!.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')).toBe(shown);
  });
});
