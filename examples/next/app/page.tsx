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
import { Suspense, useSyncExternalStore } from 'react';
import { ChatView } from './chat-view';

// Created while the page is prerendered too: there it opens no storage and sends nothing.
const client = createLifeline({ baseUrl: '/api/lifeline' });
const transport = createChatTransport(client);

function Conversation({ chatId }: { chatId: string }) {
  const { messages, sendMessage, stop, status } = useChat({ id: chatId, transport, messages: useInitialMessages(transport, chatId), resume: true });
  return (
    <ChatView
      messages={messages}
      status={status}
      onSend={(text) => void sendMessage({ text })}
      onStop={() => void (status === 'streaming' ? stop() : transport.cancel(chatId))}
    />
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
