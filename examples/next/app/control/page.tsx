'use client';
/**
 * The size control: the same chat as ../page.tsx on the AI SDK's default transport, without
 * Lifeline. Only built, so that measure.mjs can tell what Lifeline adds to the page's JavaScript.
 */
import { useChat } from '@ai-sdk/react';
import { ChatView } from '../chat-view';

export default function ControlPage() {
  const { messages, sendMessage, stop, status } = useChat({ id: 'next-control' });
  return <ChatView messages={messages} status={status} onSend={(text) => void sendMessage({ text })} onStop={() => void stop()} />;
}
