/**
 * The oracle of the AI SDK page's tests (and its measurements): what the page's `useChat`
 * held at every render, the reference message the AI SDK itself builds from the same mock
 * model, and the server's own record of the conversation.
 */
import type { Page } from '@playwright/test';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { streamAnswer } from '../ai-model.js';

/** One committed render of the page's chat, as published on `window.lifelineChat`. */
export interface ChatSample {
  /** Which page (tab or document) rendered it. */
  page: string;
  /** Epoch ms in the page. */
  at: number;
  /** When the rendering document started (epoch ms): tells a reloaded page's renders from the old one's last ones. */
  document: number;
  status: string;
  ids: string[];
  assistants: { id: string; types: string[]; texts: string[] }[];
}

/**
 * Records every state the page publishes: a setter on `window.lifelineChat` (which the page
 * assigns after each render) sends a summary to Node at once, so nothing is lost to a reload
 * or a closed tab. Call before the page navigates.
 */
export async function recordChat(page: Page, label: string, sink: ChatSample[]): Promise<void> {
  await page.exposeFunction('__lifelineChatSample', (sample: Omit<ChatSample, 'page'>) => void sink.push({ ...sample, page: label }));
  // Plain source, not a function: a transpiler (tsx) would add helpers the page does not have.
  await page.addInitScript({ content: RECORDER });
}

const RECORDER = `(() => {
  let value;
  Object.defineProperty(window, 'lifelineChat', {
    configurable: true,
    get: () => value,
    set(next) {
      value = next;
      window.__lifelineChatSample({
        at: performance.timeOrigin + performance.now(),
        document: performance.timeOrigin,
        status: next.status,
        ids: next.messages.map((message) => message.id),
        assistants: next.messages
          .filter((message) => message.role === 'assistant')
          .map((message) => ({ id: message.id, types: message.parts.map((part) => part.type), texts: message.parts.map((part) => part.text ?? '') })),
      });
    },
  });
})();`;

/**
 * What went wrong at any sampled moment, compared with the final messages: a message id
 * twice, an assistant message that is not one of the final ones (a resumed stream taking
 * over another message), a part sequence that is not a prefix of the final one (a
 * duplicated or misplaced part), a text that is not a prefix of the final text.
 */
export function sampleProblems(samples: readonly ChatSample[], finals: readonly UIMessage[]): string[] {
  const byId = new Map(finals.map((message) => [message.id, message]));
  const problems: string[] = [];
  for (const [index, sample] of samples.entries()) {
    const where = `sample ${index} (${sample.page}, ${sample.status})`;
    if (new Set(sample.ids).size !== sample.ids.length) problems.push(`${where}: a message twice: ${sample.ids.join(', ')}`);
    for (const shown of sample.assistants) {
      const final = byId.get(shown.id);
      if (!final) {
        problems.push(`${where}: assistant message ${shown.id} is not in the final messages`);
        continue;
      }
      const types = final.parts.map((part) => part.type);
      if (shown.types.some((type, i) => types[i] !== type)) problems.push(`${where}: parts [${shown.types}] are not a prefix of [${types}]`);
      shown.texts.forEach((text, i) => {
        const part = final.parts[i];
        const full = part && 'text' in part && typeof part.text === 'string' ? part.text : '';
        if (!full.startsWith(text)) problems.push(`${where}: part ${i} text ${JSON.stringify(text.slice(-40))} is not a prefix of the final text`);
      });
    }
  }
  return problems;
}

/** The assistant message the AI SDK itself (`readUIMessageStream`) builds from the mock model's answer to `user`, as turn `turnId`. */
export async function referenceMessage(user: UIMessage, turnId: string, words: number): Promise<UIMessage> {
  const source = await streamAnswer([user], { delayMs: 0, words });
  const stream = source.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform: (chunk, controller) => controller.enqueue(chunk.type === 'start' ? { ...chunk, messageId: turnId } : chunk),
    }),
  );
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) last = structuredClone(message);
  if (!last) throw new Error('The mock model produced no message.');
  return last;
}

/** A turn as the server lists it (`content` is the user UIMessage the transport sent). */
export interface ServerTurn {
  id: string;
  status: string;
  content: UIMessage;
}

/** The conversation's turns on the server, oldest first. */
export async function serverTurns(origin: string, chatId: string): Promise<ServerTurn[]> {
  const response = await fetch(`${origin}/api/conversations/${chatId}/turns`);
  if (!response.ok) throw new Error(`Listing turns answered ${response.status}`);
  return ((await response.json()) as { turns: ServerTurn[] }).turns.reverse();
}

/** What the page's useChat holds now. */
export function chatState(page: Page): Promise<{ status: string; messages: UIMessage[] }> {
  return page.evaluate(() => {
    const chat = (window as unknown as { lifelineChat?: { status: string; messages: unknown[] } }).lifelineChat;
    return JSON.parse(JSON.stringify(chat ?? { status: 'loading', messages: [] })) as { status: string; messages: UIMessage[] };
  });
}
