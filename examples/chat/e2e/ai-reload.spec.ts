import type { Page } from '@playwright/test';
/**
 * The AI SDK page across page lifetimes: reloads, a closed and reopened page, a second
 * tab, `stop()` before a reload, and React StrictMode (development build). Same oracle as
 * ai-chat.spec.ts.
 */
import type { UIMessage } from 'ai';
import { chatState, referenceMessage, sampleProblems } from './ai-oracle.js';
import { ask, endedTurns, expect, expectChatMatchesServer, streamRequests, test, waitForChat, waitForPart, WORDS } from './ai-fixtures.js';
import { uniqueConversation } from './fixtures.js';

test('reload mid-turn: the partial answer shows from this device at once, then the turn resumes into the same message', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'What is the weather in Bergen?');
  await waitForPart(page, 'text', 20);
  const reloadedAt = Date.now();
  await page.reload();
  const [turn] = await expectChatMatchesServer(ai, page, chatId, 1);

  // useChat's very first render after the reload already holds the partial answer.
  const first = ai.samples.find((sample) => sample.document > reloadedAt);
  expect(first?.assistants.map((message) => message.id)).toEqual([turn!.id]);
  expect(first?.assistants[0]?.types).toContain('tool-weather');
  expect(streamRequests(ai.proxy, turn!.id)).toBe(2);
});

test('page closed mid-turn and reopened after the turn ended: the whole answer, once', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'Should I pack an umbrella for Lisbon?');
  await waitForPart(page, 'reasoning', 10);
  await page.close();
  // The server finishes the turn with nobody listening.
  expect((await endedTurns(ai, chatId)).map((turn) => turn.status)).toEqual(['complete']);

  const reopened = await page.context().newPage();
  await ai.open(reopened, chatId);
  await expectChatMatchesServer(ai, reopened, chatId, 1);
});

test('stop() ends the turn cancelled on the server; after a reload it is shown as it stopped and never resumed', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'What is the weather in Bergen?');
  await waitForPart(page, 'text', 10);
  await page.getByRole('button', { name: 'Stop' }).click();
  await waitForChat(page, 'ready');
  const [stopped] = await endedTurns(ai, chatId);
  expect(stopped!.status).toBe('cancelled');
  // The reload comes once the page has stored the turn's end: a reload racing that write
  // leaves a partial turn in storage, and the client then fetches the end it never stored
  // (a stream request useChat never sees), which this test would count as a resume.
  await expect.poll(() => storedStatus(page, stopped!.id)).toBe('cancelled');
  const streamsBefore = streamRequests(ai.proxy, stopped!.id);

  const reloadedAt = Date.now();
  await page.reload();
  await waitForChat(page);
  // A second question after the reload: its answer completes long after any resume would have started.
  await ask(page, 'Is it warm enough for a swim in Nice?');
  await waitForChat(page, 'streaming');
  await waitForChat(page, 'ready');
  const turns = await endedTurns(ai, chatId);
  expect(turns.map((turn) => turn.status)).toEqual(['cancelled', 'complete']);

  const reference = [turns[0]!.content, await referenceMessage(turns[0]!.content, turns[0]!.id, WORDS), turns[1]!.content, await referenceMessage(turns[1]!.content, turns[1]!.id, WORDS)];
  const { messages } = await chatState(page);
  expect(messages.map((message) => message.id)).toEqual(reference.map((message) => message.id));
  expect(messages[3]).toEqual(reference[3]);
  // The stopped answer: what the server logged before the cancel, a prefix of the full answer.
  const text = (message: UIMessage): string => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  expect(text(messages[1]!).length).toBeGreaterThan(0);
  expect(text(messages[1]!).length).toBeLessThan(text(reference[1]!).length);
  expect(sampleProblems(ai.samples, reference)).toEqual([]);
  // Never resumed: no stream for it after the reload, and useChat only streamed the second answer.
  expect(streamRequests(ai.proxy, stopped!.id)).toBe(streamsBefore);
  const afterReload = ai.samples.filter((sample) => sample.document > reloadedAt);
  const firstStreaming = afterReload.find((sample) => sample.status !== 'ready');
  expect(firstStreaming?.ids).toContain(turns[1]!.content.id);
});

test('a second tab opening the chat mid-turn shows the same answer, over one network stream for both tabs', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  await ask(page, 'What is the weather in Bergen?');
  await waitForPart(page, 'reasoning', 10);
  const second = await page.context().newPage();
  await ai.open(second, chatId);
  const [turn] = await expectChatMatchesServer(ai, page, chatId, 1);
  await expectChatMatchesServer(ai, second, chatId, 1);
  expect(ai.samples.some((sample) => sample.page === 'page 2' && sample.status === 'streaming')).toBe(true);
  expect(streamRequests(ai.proxy, turn!.id)).toBe(1);
});

test.describe('React StrictMode (development build: every effect mounts twice)', () => {
  test.use({ devBuild: true });

  test('send, then reload mid-turn: one resume, one message, one stream per page', async ({ page, ai }) => {
    const chatId = uniqueConversation();
    await ai.open(page, chatId);
    await ask(page, 'Should I pack an umbrella for Lisbon?');
    await waitForPart(page, 'text', 10);
    await page.reload();
    const [turn] = await expectChatMatchesServer(ai, page, chatId, 1);
    expect(streamRequests(ai.proxy, turn!.id)).toBe(2);
    // StrictMode was on: the page's load effect ran twice on each mount (two list requests per load).
    const lists = ai.proxy.requests.filter((request) => request.path.startsWith(`/api/conversations/${chatId}/turns`)).length;
    expect(lists).toBeGreaterThanOrEqual(4);
  });
});

// Messages accepted seconds before the reload: their turns are followed from the outbox's
// accepted entries before the conversation reads its stored turns (conversation.ready once
// resolved without them, about one reload in three, and useChat showed user messages only).
test('reload mid-turn after two earlier turns: every answer shows from storage and the live one resumes', async ({ page, ai }) => {
  const chatId = uniqueConversation();
  await ai.open(page, chatId);
  for (const question of ['What is the weather in Bergen?', 'And in Oslo?']) {
    await ask(page, question);
    await waitForChat(page, 'streaming');
    await waitForChat(page, 'ready');
  }
  await ask(page, 'Should I pack an umbrella for Lisbon?');
  await waitForPart(page, 'text', 20);
  await page.reload();
  await expectChatMatchesServer(ai, page, chatId, 3);
});

/** The status the page's IndexedDB holds for the turn (`lifeline:default`), read through a second connection. */
function storedStatus(page: Page, turnId: string): Promise<string | undefined> {
  return page.evaluate(
    (turnId) =>
      new Promise<string | undefined>((resolve, reject) => {
        const open = indexedDB.open('lifeline:default');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const get = db.transaction('turns', 'readonly').objectStore('turns').get(turnId);
          get.onsuccess = () => (db.close(), resolve((get.result as { status?: string } | undefined)?.status));
          get.onerror = () => (db.close(), reject(get.error));
        };
      }),
    turnId,
  );
}
