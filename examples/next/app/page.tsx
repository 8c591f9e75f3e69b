'use client';
/**
 * The page: the AI SDK's `useChat` over Lifeline. A reload mid-answer shows the stored text
 * at once and resumes the stream; Stop cancels the turn on the server (or, after a reload,
 * when no stream of this page shows the turn, through the transport).
 */
import { useChat } from '@ai-sdk/react';
import { createLifeline } from 'lifeline-chat';
import { createChatTransport } from 'lifeline-chat/ai-sdk';
import { useInitialMessages } from 'lifeline-chat/ai-sdk/react';
import { Suspense, useState, useSyncExternalStore } from 'react';

// Created while the page is prerendered too: there it opens no storage and sends nothing.
const client = createLifeline({ baseUrl: '/api/lifeline' });
const transport = createChatTransport(client);

function Conversation({ chatId }: { chatId: string }) {
  const { messages, sendMessage, stop, status } = useChat({ id: chatId, transport, messages: useInitialMessages(transport, chatId), resume: true });
  const [input, setInput] = useState('');
  return (
    <main data-status={status}>
      <ol>
        {messages.map((message) => (
          <li key={message.id} data-role={message.role}>
            {message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')}
          </li>
        ))}
      </ol>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input aria-label="Message" value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit">Send</button>
        <button type="button" onClick={() => void (status === 'streaming' ? stop() : transport.cancel(chatId))}>
          Stop
        </button>
      </form>
    </main>
  );
}

const noChange = (): (() => void) => () => undefined;

export default function Page() {
  // The conversation is read in the browser only (its storage and the server's list): no server render of it.
  const chatId = useSyncExternalStore(noChange, () => new URL(location.href).searchParams.get('chat') ?? 'next-demo', () => undefined);
  if (chatId === undefined) return <p>Loading…</p>;
  return (
    <Suspense fallback={<p>Loading…</p>}>
      <Conversation chatId={chatId} />
    </Suspense>
  );
}
