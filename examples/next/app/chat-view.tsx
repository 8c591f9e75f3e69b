'use client';
/**
 * The chat both pages draw: its messages as plain text and a form. The Lifeline page and the
 * size control share it, so that what measure.mjs compares differs only in the transport.
 */
import type { UIMessage } from 'ai';
import { useState } from 'react';

export interface ChatViewProps {
  messages: UIMessage[];
  status: string;
  onSend: (text: string) => void;
  onStop: () => void;
}

export function ChatView({ messages, status, onSend, onStop }: ChatViewProps) {
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
          onSend(input);
          setInput('');
        }}
      >
        <input aria-label="Message" value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit">Send</button>
        <button type="button" onClick={onStop}>
          Stop
        </button>
      </form>
    </main>
  );
}
