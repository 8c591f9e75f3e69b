'use client';
/**
 * The size control: the same chat as ../page.tsx on the AI SDK's default transport, without
 * Lifeline. Only built, so that measure.mjs can tell what Lifeline adds to the page's JavaScript.
 */
import { useChat } from '@ai-sdk/react';
import { useState } from 'react';

export default function ControlPage() {
  const { messages, sendMessage, stop } = useChat({ id: 'next-control' });
  const [input, setInput] = useState('');
  return (
    <main>
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
        <button type="button" onClick={() => void stop()}>
          Stop
        </button>
      </form>
    </main>
  );
}
