import { useState, type FormEvent, type KeyboardEvent } from 'react';

const HINT = 'Ask anything — try “Propose three personas for a travel app”';

/**
 * A textarea named "Message" and a "Send" button. Enter sends; Shift+Enter adds a line.
 * While `busy` (an answer is on its way) typing goes on but nothing is sent.
 */
export function Composer({ onSend, placeholder = HINT, busy = false }: { onSend: (text: string) => void; placeholder?: string; busy?: boolean }) {
  const [text, setText] = useState('');
  const empty = text.trim() === '';

  function submit(event?: FormEvent) {
    event?.preventDefault();
    if (empty || busy) return;
    onSend(text.trim());
    setText('');
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) submit(event);
  }

  return (
    <form className="composer" onSubmit={submit}>
      <textarea
        aria-label="Message"
        placeholder={placeholder}
        rows={2}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <button type="submit" className="button primary" disabled={empty || busy}>
        Send
      </button>
    </form>
  );
}
