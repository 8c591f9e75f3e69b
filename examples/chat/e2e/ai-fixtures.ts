/**
 * Fixtures for the AI SDK page's end-to-end tests: a fresh example server per test (the
 * mock model through the real `streamText`, small delays), the seeded fault proxy in front
 * of it (every page loads through the proxy, so a cut or a stall hits real sockets), and
 * helpers that drive `useChat` on the page and check it against the oracle.
 */
import type { Page } from '@playwright/test';
import type { UIMessage } from 'ai';
import { isStreamRequest, startFaultProxy, type FaultProxy } from '../../../test/fixtures/fault-proxy.js';
import { startExampleServer, type ExampleServer } from '../server.js';
import { chatState, recordChat, referenceMessage, sampleProblems, serverTurns, type ChatSample, type ServerTurn } from './ai-oracle.js';
import { referenceConversation, startPlainRoute, withoutApprovalIds, type PlainRoute } from './ai-reference.js';
import { ensureAppBuilt, expect, test as base } from './fixtures.js';

/** Words of the mock model's answer, and its delay between stream parts: a turn takes about 1.5 s, long enough to break it mid-way. */
export const WORDS = 60;
const MODEL_DELAY_MS = 12;

export interface AiLab {
  app: ExampleServer;
  proxy: FaultProxy;
  /** The AI SDK's own route over the tools model: the reference of the tool tests. */
  route: PlainRoute;
  /** Every render of every page opened through {@link AiLab.open}, in order. */
  samples: ChatSample[];
  /** Opens the chat `chatId` on the AI page (through the proxy) and waits until useChat has its messages. */
  open(page: Page, chatId: string, query?: Record<string, string>): Promise<void>;
}

export const test = base.extend<{ ai: AiLab; devBuild: boolean; modelWords: number }>({
  /** Serve React's development build, where StrictMode mounts every effect twice. */
  devBuild: [false, { option: true }],
  /** Words of the weather model's answer (a longer one leaves time to act mid-turn). */
  modelWords: [WORDS, { option: true }],
  ai: async ({ appBuilt, devBuild, modelWords }, use) => {
    void appBuilt;
    const distDir = devBuild ? await ensureAppBuilt('development') : undefined;
    const app = await startExampleServer({ port: 0, modelDelayMs: MODEL_DELAY_MS, modelWords, restartDownMs: 1000, ...(distDir && { distDir }) });
    const proxy = await startFaultProxy({ targetPort: app.port });
    const route = await startPlainRoute();
    const samples: ChatSample[] = [];
    const recorded = new WeakSet<Page>();
    let pages = 0;
    await use({
      app,
      proxy,
      route,
      samples,
      async open(page, chatId, query = {}) {
        if (!recorded.has(page)) {
          recorded.add(page);
          await recordChat(page, `page ${++pages}`, samples);
        }
        await page.goto(`${proxy.origin}/ai?${new URLSearchParams({ c: chatId, ...query })}`);
        await waitForChat(page);
      },
    });
    await proxy.close();
    await route.close();
    await app.close();
  },
});

export { expect };

/** Waits until the page's useChat has its messages and is in `status` (any status when omitted). */
export async function waitForChat(page: Page, status?: string, timeout = 15_000): Promise<void> {
  await page.waitForFunction(
    (status) => {
      const chat = (window as unknown as { lifelineChat?: { status: string } }).lifelineChat;
      return chat !== undefined && (status === undefined || chat.status === status);
    },
    status,
    { timeout },
  );
}

/** Waits until the newest assistant message shows a part of `type` (and, for text, at least `chars` characters). */
export async function waitForPart(page: Page, type: string, chars = 1): Promise<void> {
  await page.waitForFunction(
    ({ type, chars }) => {
      const chat = (window as unknown as { lifelineChat?: { messages: { role: string; parts: { type: string; text?: string }[] }[] } }).lifelineChat;
      const last = chat?.messages.at(-1);
      return last?.role === 'assistant' && last.parts.some((part) => part.type === type && (part.text ?? ' ').length >= chars);
    },
    { type, chars },
    { timeout: 15_000 },
  );
}

export async function ask(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

/** Event-stream requests the proxy saw for `turnId`. */
export function streamRequests(proxy: FaultProxy, turnId: string): number {
  return proxy.requests.filter((request) => isStreamRequest(request) && request.path.includes(`/turns/${turnId}/`)).length;
}

/** Waits until every turn of the chat has ended on the server; returns them, oldest first. */
export async function endedTurns(ai: AiLab, chatId: string): Promise<ServerTurn[]> {
  let turns: ServerTurn[] = [];
  await expect
    .poll(async () => {
      turns = await serverTurns(ai.app.url, chatId);
      return turns.length > 0 && turns.every((turn) => ['complete', 'failed', 'cancelled'].includes(turn.status));
    }, { timeout: 20_000, intervals: [50] })
    .toBe(true);
  return turns;
}

/**
 * The oracle: the page's useChat ends `ready` holding, for each turn on the server (one
 * per send), its user message and an assistant message deep-equal to the reference; and
 * no sampled render showed a duplicated message or part, or a text that is not a prefix.
 * Returns the server's turns.
 */
export async function expectChatMatchesServer(ai: AiLab, page: Page, chatId: string, sends: number): Promise<ServerTurn[]> {
  const turns = await endedTurns(ai, chatId);
  expect(turns.map((turn) => turn.status)).toEqual(Array(sends).fill('complete'));
  const expected: UIMessage[] = [];
  for (const turn of turns) expected.push(turn.content, await referenceMessage(turn.content, turn.id, WORDS));
  await expect.poll(async () => (await chatState(page)).messages, { timeout: 10_000, intervals: [50] }).toEqual(expected);
  await waitForChat(page, 'ready');
  // Renders were sampled as the answer grew (not only the final one).
  expect(ai.samples.filter((sample) => sample.status === 'streaming').length).toBeGreaterThan(5);
  expect(sampleProblems(ai.samples, expected)).toEqual([]);
  return turns;
}

/**
 * The oracle of the tool tests: the server's turns end with `statuses`; the page's useChat
 * ends `status` holding exactly what the AI SDK's own `DefaultChatTransport` ends with for
 * the same requests (approval ids aside: the AI SDK draws them at random; and, with
 * `resumedApproval`, the approval's decision, which a resumed stream cannot carry); no sampled
 * render showed a duplicated message or part. Returns the server's turns.
 */
export async function expectToolChat(ai: AiLab, page: Page, chatId: string, statuses: string[], { status = 'ready', resumedApproval = false } = {}): Promise<ServerTurn[]> {
  // A continuation is sent once the turn before it ended: wait for as many turns as expected.
  let turns: ServerTurn[] = [];
  await expect.poll(async () => (turns = await endedTurns(ai, chatId)).length, { timeout: 15_000, intervals: [50] }).toBe(statuses.length);
  expect(turns.map((turn) => turn.status)).toEqual(statuses);
  const replaced: UIMessage[] = [];
  const expected = withoutApprovalIds(await referenceConversation(ai.route, turns, replaced), !resumedApproval);
  await expect.poll(async () => withoutApprovalIds((await chatState(page)).messages, !resumedApproval), { timeout: 10_000, intervals: [50] }).toEqual(expected);
  await waitForChat(page, status);
  expect(sampleProblems(ai.samples, [...expected, ...replaced])).toEqual([]);
  return turns;
}
