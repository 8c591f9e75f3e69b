// @vitest-environment happy-dom
/**
 * `useInitialMessages` (lifeline-chat/ai-sdk/react) under the real `useChat`: the component suspends
 * until the conversation is read, starts `useChat` with it, and a later mount (a reload, on the
 * same storage) reads afresh; a turn that failed shows its error again after the reload. The
 * client talks to the reference handler in-process.
 */
import { useChat } from '@ai-sdk/react';
import { act, cleanup, render, screen, waitFor } from '@testing-library/react';
import type { UIMessage } from 'ai';
import { Component, Suspense, type ReactNode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createChatTransport, type LifelineChatTransport } from '../../../../src/ai-sdk/index.js';
import { useInitialMessages } from '../../../../src/ai-sdk/react/index.js';
import { createLifeline } from '../../../../src/client.js';
import { uiMessageAgent } from '../../../../src/server/ai-sdk/index.js';
import { createLifelineHandler } from '../../../../src/server/http/handler.js';
import { createMemoryStore, type MemoryStore } from '../../../../src/storage/memory-store.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  cleanup();
  vi.restoreAllMocks();
  for (const step of cleanups.reverse()) await step();
  cleanups = [];
});

const question = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const textOf = (message: UIMessage): string => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

/** A handler whose agent answers "Echo: <question>", and fails after its text for a question starting "Fail". */
function server(errors: unknown[] = []) {
  const handler = createLifelineHandler({
    basePath: '/api',
    onError: (error) => void errors.push(error),
    agent: uiMessageAgent(async function* ({ message }) {
      const text = textOf(message);
      yield { type: 'start' };
      yield { type: 'text-start', id: 't' };
      yield { type: 'text-delta', id: 't', delta: `Echo: ${text}` };
      yield { type: 'text-end', id: 't' };
      if (text.startsWith('Fail')) yield { type: 'error', errorText: 'The model fell over.' };
      else yield { type: 'finish' };
    }),
  });
  cleanups.push(() => handler.close());
  /** One page's transport over `store` (the same store again is the same device after a reload). */
  return (store: MemoryStore): LifelineChatTransport => {
    const client = createLifeline({ baseUrl: 'http://lifeline.test/api', storage: store, fetch: (input, init) => handler(new Request(input, init)) });
    cleanups.push(() => client.dispose());
    return createChatTransport(client);
  };
}

class Boundary extends Component<{ children: ReactNode }, { error?: Error }> {
  override state: { error?: Error } = {};
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  override render() {
    return this.state.error ? <p>boundary: {this.state.error.message}</p> : this.props.children;
  }
}

type Chat = ReturnType<typeof useChat>;

/** The one-line pattern of the README: the messages from the hook straight into useChat. */
function mount(transport: LifelineChatTransport, chatId: string): { chat: () => Chat; renders: UIMessage[][] } {
  const renders: UIMessage[][] = [];
  let latest: Chat | undefined;
  function ChatView() {
    const chat = useChat({ id: chatId, transport, messages: useInitialMessages(transport, chatId), resume: true });
    latest = chat;
    renders.push(chat.messages);
    return <p>{`${chat.messages.length} messages, ${chat.status}${chat.error ? `: ${chat.error.message}` : ''}`}</p>;
  }
  render(
    <Boundary>
      <Suspense fallback={<p>loading</p>}>
        <ChatView />
      </Suspense>
    </Boundary>,
  );
  return { chat: () => latest!, renders };
}

describe('useInitialMessages', () => {
  it('suspends until the conversation is read, starts useChat with it, and reads afresh on the next mount', async () => {
    const page = server();
    const store = createMemoryStore();
    const first = page(store);
    const one = mount(first, 'chat-history');
    expect(screen.getByText('loading')).toBeTruthy();
    await screen.findByText('0 messages, ready');
    // useChat never rendered before the load ended: no render with an empty chat that fills later.
    expect(one.renders.every((messages) => messages.length === 0)).toBe(true);
    await act(() => one.chat().sendMessage(question('u1', 'Hello')));
    await waitFor(() => expect(one.chat().status).toBe('ready'));
    const shown = one.chat().messages;
    expect(shown.map(textOf)).toEqual(['Hello', 'Echo: Hello']);
    cleanup();

    // A reload: a new page on the same storage; the first render already holds the history.
    const second = mount(page(store), 'chat-history');
    expect(screen.getByText('loading')).toBeTruthy();
    await screen.findByText('2 messages, ready');
    expect(second.renders[0]).toEqual(shown);
    await act(() => second.chat().sendMessage(question('u2', 'Again')));
    await waitFor(() => expect(second.chat().messages).toHaveLength(4));
    await waitFor(() => expect(second.chat().status).toBe('ready'));
    cleanup();

    // The same transport mounted again: not the messages read before, the conversation now.
    const third = mount(first, 'chat-history');
    await screen.findByText('4 messages, ready');
    expect(third.renders[0]!.map(textOf)).toEqual(['Hello', 'Echo: Hello', 'Again', 'Echo: Again']);
  });

  it('shows a failed turn with its error after a reload', async () => {
    const errors: unknown[] = [];
    const page = server(errors);
    const store = createMemoryStore();
    const one = mount(page(store), 'chat-failed');
    await screen.findByText('0 messages, ready');
    await act(() => one.chat().sendMessage(question('u1', 'Fail please')));
    await screen.findByText('2 messages, error: The model fell over.');
    cleanup();

    const reloaded = mount(page(store), 'chat-failed');
    await screen.findByText('2 messages, error: The model fell over.');
    expect(reloaded.chat().messages.map(textOf)).toEqual(['Fail please', 'Echo: Fail please']);
    // The server reported the failure once, to its own error channel.
    expect(errors.map((error) => (error instanceof Error ? error.message : error))).toEqual(['The model fell over.']);
  });

  it('throws a load that fails to the error boundary', async () => {
    // React logs the error the boundary catches: expected here.
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const transport = server()(createMemoryStore());
    const failing: LifelineChatTransport = { ...transport, loadMessages: () => Promise.reject(new Error('storage is gone')) };
    mount(failing, 'chat-broken');
    await screen.findByText('boundary: storage is gone');
  });
});
