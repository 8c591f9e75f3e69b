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
import { ensureAppBuilt, expect, test as base } from './fixtures.js';

/** Words of the mock model's answer, and its delay between stream parts: a turn takes about 1.5 s, long enough to break it mid-way. */
export const WORDS = 60;
const MODEL_DELAY_MS = 12;

export interface AiLab {
  app: ExampleServer;
  proxy: FaultProxy;
  /** Every render of every page opened through {@link AiLab.open}, in order. */
  samples: ChatSample[];
  /** Opens the chat `chatId` on the AI page (through the proxy) and waits until useChat has its messages. */
  open(page: Page, chatId: string, query?: Record<string, string>): Promise<void>;
}

export const test = base.extend<{ ai: AiLab; devBuild: boolean }>({
  /** Serve React's development build, where StrictMode mounts every effect twice. */
  devBuild: [false, { option: true }],
  ai: async ({ appBuilt, devBuild }, use) => {
    void appBuilt;
    const distDir = devBuild ? await ensureAppBuilt('development') : undefined;
    const app = await startExampleServer({ port: 0, modelDelayMs: MODEL_DELAY_MS, modelWords: WORDS, restartDownMs: 1000, ...(distDir && { distDir }) });
    const proxy = await startFaultProxy({ targetPort: app.port });
    const samples: ChatSample[] = [];
    const recorded = new WeakSet<Page>();
    let pages = 0;
    await use({
      app,
      proxy,
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
