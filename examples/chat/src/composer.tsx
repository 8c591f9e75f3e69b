import { useState, type FormEvent, type KeyboardEvent } from 'react';

/** A textarea named "Message" and a "Send" button. Enter sends; Shift+Enter adds a line. */
export function Composer({ onSend }: { onSend: (text: string) => void }) {
  const [text, setText] = useState('');
  const empty = text.trim() === '';

  function submit(event?: FormEvent) {
    event?.preventDefault();
    if (empty) return;
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
        placeholder="Ask anything — try “Propose three personas for a travel app”"
        rows={2}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <button type="submit" className="button primary" disabled={empty}>
        Send
      </button>
    </form>
  );
}
