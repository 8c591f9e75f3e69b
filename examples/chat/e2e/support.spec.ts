/**
 * The `/support` page against the operator API (docs/protocol.md sections 10 and 11), in
 * Chromium: an answer that never reached its page is listed undelivered with its action's JSON
 * and leaves the list once the page opens again and its receipt lands; a stuck turn ended with
 * the End button ends `ended_by_operator` on the server and in the chat.
 */
import type { Page } from '@playwright/test';
import { startExampleServer } from '../server.js';
import { expect, lastTurn, openChat, sendMessage, test as base, uniqueConversation } from './fixtures.js';

const TOKEN = 'e2e-operator-token';

// The example server with the operator API on and short windows, as OPERATOR_TOKEN,
// STUCK_AFTER_MS, UNDELIVERED_AFTER_MS and PRINCIPAL_HEADER would set it.
const test = base.extend({
  app: async ({ appBuilt }, use) => {
    void appBuilt;
    const app = await startExampleServer({
      port: 0,
      tokensPerSecond: 40,
      support: { operatorToken: TOKEN, stuckAfterMs: 800, undeliveredAfterMs: 800, principalHeader: 'x-example-user' },
    });
    await use(app);
    await app.close();
  },
});

type Shown = { turn: { status: string; delivery: { state: string } }; events: { type: string; status?: string; output?: unknown; error?: { code: string } }[] };

/** The server's own view of a turn, through the operator API (the oracle the page is compared with). */
async function operatorShow(url: string, turnId: string): Promise<Shown> {
  const response = await fetch(`${url}/api/operator/turns/${turnId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as Shown;
}

async function openSupport(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/support`);
  await page.getByRole('textbox', { name: 'Operator token' }).fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.locator('[data-operator-api="on"]')).toBeVisible();
}

test('a cut stream on a closed page is undelivered, with its action JSON, until the page opens again', async ({ context, app }) => {
  const conversationId = uniqueConversation();
  const chat = await context.newPage();
  await openChat(chat, app, conversationId, { user: 'alice' });
  await sendMessage(chat, 'Propose three personas for a night bakery');
  const card = lastTurn(chat).locator('[data-action-name="propose_personas"]');
  await expect(card).toBeVisible();
  const turnId = (await lastTurn(chat).getAttribute('data-turn-id'))!;
  // The stream is cut and the page closed before the answer ends: nobody receives its end.
  expect(app.lab.cut()).toBeGreaterThan(0);
  await chat.close();

  const support = await context.newPage();
  await openSupport(support, app.url);
  const row = support.locator(`[data-support-list="undelivered"] [data-turn-id="${turnId}"]`);
  await expect(row).toBeVisible({ timeout: 20_000 });
  await expect(row).toHaveAttribute('data-delivery', 'pending');
  await expect(row.locator('[data-principal]')).toHaveText('alice');
  const shownByServer = await operatorShow(app.url, turnId);
  expect(shownByServer.turn.status).toBe('complete');
  const output = shownByServer.events.find((event) => event.type === 'action' && event.status === 'completed')?.output;
  expect(output).toHaveLength(3);
  const shown = JSON.parse((await row.locator('[data-action-name="propose_personas"] [data-action-json]').textContent()) ?? 'null') as unknown;
  expect(shown).toEqual(output);

  // The chat opens again: it recovers the turn, verifies it and sends the receipt.
  const again = await context.newPage();
  await openChat(again, app, conversationId, { user: 'alice' });
  await expect(again.locator(`[data-turn-id="${turnId}"]`)).toHaveAttribute('data-status', 'complete');
  await expect(row).toHaveCount(0);
  expect((await operatorShow(app.url, turnId)).turn.delivery.state).toBe('delivered');
  // Another principal's routes do not know alice's turn (docs/protocol.md section 8).
  expect((await fetch(`${app.url}/api/turns/${turnId}`, { headers: { 'x-example-user': 'mallory' } })).status).toBe(404);
});

test('a stuck turn ended with the End button ends ended_by_operator, on the server and in the chat', async ({ context, app }) => {
  const chat = await context.newPage();
  await openChat(chat, app, uniqueConversation(), { user: 'bob' });
  await sendMessage(chat, '/stuck where is my order 1234?');
  const turn = lastTurn(chat);
  await expect(turn.locator('[data-action-name="lookup_order"]')).toBeVisible();
  const turnId = (await turn.getAttribute('data-turn-id'))!;

  const support = await context.newPage();
  await openSupport(support, app.url);
  const row = support.locator(`[data-support-list="stuck"] [data-turn-id="${turnId}"]`);
  await expect(row).toBeVisible({ timeout: 20_000 });
  await expect(row.locator('[data-principal]')).toHaveText('bob');
  await expect(row.locator('[data-action-name="lookup_order"]')).toHaveAttribute('data-action-status', 'started');
  await row.getByRole('button', { name: 'End…' }).click();
  await row.getByRole('textbox', { name: 'Reason' }).fill('The order service is down; please ask again later.');
  await row.getByRole('button', { name: 'End turn' }).click();

  const answer = support.locator('[data-last-answer]');
  await expect(answer).toContainText('"status": "failed"');
  const body = JSON.parse((await answer.textContent()) ?? 'null') as { turn: { id: string; status: string; principal: string } };
  expect(body.turn).toMatchObject({ id: turnId, status: 'failed', principal: 'bob' });
  await expect(row).toHaveCount(0);

  await expect(turn).toHaveAttribute('data-status', 'failed');
  await expect(turn).toHaveAttribute('data-end-error', 'ended_by_operator');
  await expect(turn).toContainText('Ended by support: The order service is down; please ask again later.');
  const { events } = await operatorShow(app.url, turnId);
  expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'ended_by_operator' } });
});

base('with no OPERATOR_TOKEN the page says the operator API is off, and the API answers 404', async ({ page, appBuilt }) => {
  void appBuilt;
  const app = await startExampleServer({ port: 0, support: {} });
  try {
    await page.goto(`${app.url}/support`);
    await expect(page.locator('[data-operator-api="off"]')).toContainText('OPERATOR_TOKEN');
    expect((await fetch(`${app.url}/api/operator/turns?state=stuck`, { headers: { authorization: 'Bearer anything' } })).status).toBe(404);
  } finally {
    await app.close();
  }
});
