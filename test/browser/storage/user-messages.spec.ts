/**
 * Durable user messages in real Chromium, through the built package: after a reload the
 * conversation lists the user message, then the completed turn it started, read from
 * IndexedDB, although the outbox entry is gone by then.
 */
import { expect, test, type Page } from '@playwright/test';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { toNodeListener } from '../../../src/server/node/index.js';
import { textAgent } from '../../fixtures/agents.js';
import { startPageServer } from '../fixtures/page-server.js';
import { allFailures, openPage, watchFailures } from './helpers.js';

const QUESTION = 'What is 2 + 2? <b>not bold</b>';
const ANSWER = 'Two and two make four. 😀';

type Shown = [role: string, key: string, content: unknown, text: string | undefined, status: string | undefined][];

/** The conversation's items as the page's client shows them. */
function items(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const conversation = window.__test['conversation'] as ReturnType<ReturnType<typeof window.lifeline.createLifeline>['conversation']>;
    return conversation.getSnapshot().items.map((item) => [item.role, item.key, item.content, item.turn?.text, item.turn?.status]) as Shown;
  });
}

test('reload after a completed turn: the conversation still lists the user message, then the turn', async ({ page }) => {
  const errors: unknown[] = [];
  const handler = createLifelineHandler({ agent: textAgent(ANSWER), basePath: '/api', onError: (error) => errors.push(error) });
  const server = await startPageServer(toNodeListener(handler, { onError: (error) => errors.push(error) }));
  try {
    await openPage(page, server.url);
    const sent = await page.evaluate(async (question) => {
      const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'messages' });
      const submission = client.conversation('conv_messages').send(question);
      const turn = await submission.accepted;
      await turn.completed;
      window.__test['client'] = client;
      return { operationId: submission.operationId, turnId: turn.id };
    }, QUESTION);

    // Folded, message included; then the outbox entry is deleted, as ~10 s after acceptance.
    await expect
      .poll(() =>
        page.evaluate(async (turnId) => {
          const store = window.lifeline.createIndexedDbStore({ namespace: 'messages' });
          try {
            const record = (await store.loadTurn(turnId))?.record;
            return { text: record?.text, content: record?.content };
          } finally {
            store.close();
          }
        }, sent.turnId),
      )
      .toEqual({ text: ANSWER, content: QUESTION });
    await page.evaluate(async (operationId) => {
      const store = window.lifeline.createIndexedDbStore({ namespace: 'messages' });
      try {
        await store.deleteOutbox(operationId);
      } finally {
        store.close();
      }
    }, sent.operationId);

    let turnRequests = 0;
    await page.route('**/api/turns/**', async (route) => {
      turnRequests += 1;
      await route.continue();
    });
    await page.reload();
    const pageErrors = watchFailures(page);
    await page.waitForFunction(() => window.lifeline !== undefined);
    await page.evaluate(() => {
      const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'messages' });
      window.__test['client'] = client;
      window.__test['conversation'] = client.conversation('conv_messages');
    });
    await expect.poll(() => items(page)).toEqual([
      ['user', sent.operationId, QUESTION, undefined, undefined],
      ['assistant', sent.turnId, undefined, ANSWER, 'complete'],
    ]);
    // Shown from storage: nothing about the ended turn was asked of the server.
    expect(turnRequests).toBe(0);
    expect(await allFailures(page, pageErrors)).toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    await handler.close();
    await server.close();
  }
});
