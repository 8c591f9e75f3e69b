// @vitest-environment happy-dom
/**
 * The real `useChat` hook (`@ai-sdk/react`) resuming after a reload that happened while a
 * tool call's input was streaming. useChat continues into the last message, instead of
 * replacing it, when that message holds a tool part in `input-streaming` (its path for
 * transports that send only the rest), and the hook's transport wrapper drops
 * `resumeStreamIsReplay`; the transport's replay from the first chunk then added every
 * part a second time. The turn is held at that point by a gate in the agent, so the test
 * is deterministic; the client talks to the handler in-process.
 */
import { useChat } from '@ai-sdk/react';
import { cleanup, renderHook, waitFor } from '@testing-library/react';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { createChatTransport } from '../../../src/ai-sdk/index.js';
import { createLifeline } from '../../../src/client.js';
import { uiMessageAgent } from '../../../src/server/ai-sdk/index.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import type { LifelineClient } from '../../../src/types.js';

const BEFORE_GATE: UIMessageChunk[] = [
  { type: 'start' },
  { type: 'start-step' },
  { type: 'reasoning-start', id: 'r' },
  { type: 'reasoning-delta', id: 'r', delta: 'Look it up first.' },
  { type: 'reasoning-end', id: 'r' },
  { type: 'tool-input-start', toolCallId: 'call-1', toolName: 'weather' },
  { type: 'tool-input-delta', toolCallId: 'call-1', inputTextDelta: '{"place":' },
];
const AFTER_GATE: UIMessageChunk[] = [
  { type: 'tool-input-delta', toolCallId: 'call-1', inputTextDelta: '"Bergen"}' },
  { type: 'tool-input-available', toolCallId: 'call-1', toolName: 'weather', input: { place: 'Bergen' } },
  { type: 'tool-output-available', toolCallId: 'call-1', output: { celsius: 10 } },
  { type: 'finish-step' },
  { type: 'start-step' },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'Cloudy, ' },
  { type: 'text-delta', id: 't', delta: '10 °C.' },
  { type: 'text-end', id: 't' },
  { type: 'finish-step' },
  { type: 'finish' },
];

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  cleanup();
  for (const step of cleanups.reverse()) await step();
  cleanups = [];
});

async function reference(turnId: string): Promise<UIMessage> {
  const chunks = [...BEFORE_GATE, ...AFTER_GATE].map((chunk) => (chunk.type === 'start' ? { ...chunk, messageId: turnId } : chunk));
  const stream = new ReadableStream<UIMessageChunk>({ start: (controller) => (chunks.forEach((chunk) => controller.enqueue(chunk)), controller.close()) });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = structuredClone(message);
  return last!;
}

describe('useChat resuming over createChatTransport', () => {
  it('replaces the half-built message after a reload mid tool input: every part once, equal to the AI SDK’s own message', async () => {
    let open = (): void => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const handler = createLifelineHandler({
      basePath: '/api',
      agent: uiMessageAgent(async function* () {
        yield* BEFORE_GATE;
        await gate;
        yield* AFTER_GATE;
      }),
    });
    cleanups.push(() => handler.close());
    const page = (store: MemoryStore): LifelineClient => {
      const client = createLifeline({ baseUrl: 'http://lifeline.test/api', storage: store, fetch: (input, init) => handler(new Request(input, init)) });
      cleanups.push(() => client.dispose());
      return client;
    };

    // The first page sends and reads up to the gate, then goes away; its storage stays.
    const store = createMemoryStore();
    const first = page(store);
    const user: UIMessage = { id: 'user-1', role: 'user', parts: [{ type: 'text', text: 'Weather in Bergen?' }] };
    const stream = await createChatTransport(first).sendMessages({ chatId: 'chat-gate', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    const reader = stream.getReader();
    let turnId = '';
    for (let read = 0; read < BEFORE_GATE.length; read++) {
      const { value } = await reader.read();
      if (value?.type === 'start') turnId = value.messageId ?? '';
    }
    await waitFor(async () => expect((await store.loadTurn(turnId))?.record.lastSeq).toBe(BEFORE_GATE.length + 1));
    first.dispose();

    // The reloaded page: useChat starts from loadMessages and resumes.
    const transport = createChatTransport(page(store));
    const messages = await transport.loadMessages('chat-gate');
    const renders: string[][] = [];
    const { result } = renderHook(() => {
      const chat = useChat({ id: 'chat-gate', transport, messages, resume: true });
      renders.push(chat.messages.at(-1)?.parts.map((part) => part.type) ?? []);
      return chat;
    });
    await waitFor(() => expect(result.current.status).toBe('streaming'));
    open();
    await waitFor(() => expect(result.current.status).toBe('ready'));

    const expected = await reference(turnId);
    expect(result.current.messages).toEqual([user, expected]);
    const types = expected.parts.map((part) => part.type);
    for (const shown of renders.filter((parts) => parts.length > 1)) expect(types.slice(0, shown.length)).toEqual(shown);
  });
});
