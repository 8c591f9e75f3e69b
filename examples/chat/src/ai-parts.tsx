/** One part of a `UIMessage` as `useChat` holds it: text, reasoning, a tool call. Text is always rendered as text. */
import { getToolName, isToolUIPart, type UIMessage } from 'ai';

type Part = UIMessage['parts'][number];

const show = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

const TOOL_STATES: Record<string, { words: string; done: boolean }> = {
  'input-streaming': { words: 'preparing its input', done: false },
  'input-available': { words: 'running', done: false },
  'approval-requested': { words: 'waiting for approval', done: false },
  'approval-responded': { words: 'approved', done: false },
  'output-available': { words: 'done', done: true },
  'output-error': { words: 'failed', done: true },
  'output-denied': { words: 'denied', done: true },
};

export function AiPart({ part, streaming }: { part: Part; streaming: boolean }) {
  if (part.type === 'text') {
    return (
      <div className={streaming && part.state === 'streaming' ? 'text streaming' : 'text'} data-part="text">
        {part.text}
      </div>
    );
  }
  if (part.type === 'reasoning') {
    const thinking = streaming && part.state === 'streaming';
    return (
      // Open while the model thinks, folded once it moves on (a click opens it again).
      <details className="reasoning" data-part="reasoning" open={thinking || undefined}>
        <summary>{thinking ? 'Thinking…' : 'Reasoning'}</summary>
        <p>{part.text}</p>
      </details>
    );
  }
  if (isToolUIPart(part)) {
    const name = getToolName(part);
    // A client tool (no `execute` on the server) waits for this page, not for the server.
    const state = name === 'locate' && part.state === 'input-available' ? { words: 'waiting for this page’s answer', done: false } : (TOOL_STATES[part.state] ?? { words: part.state, done: false });
    const failed = part.state === 'output-error' || part.state === 'output-denied';
    return (
      <section
        className={`action ${failed ? 'action-failed' : state.done ? 'action-completed' : 'action-started'}`}
        data-part="tool"
        data-tool-name={name}
        data-tool-state={part.state}
        aria-label={`Tool ${name}`}
      >
        <header>
          <span className="action-icon" aria-hidden="true">
            {failed ? '✕' : state.done ? '✓' : <span className="spinner" />}
          </span>
          <strong>{name}</strong>
          <span className="muted">{state.words}</span>
        </header>
        {part.input !== undefined && (
          <pre className="action-output">
            <span className="label">input</span>
            {show(part.input)}
          </pre>
        )}
        {part.state === 'output-available' && (
          <pre className="action-output">
            <span className="label">output</span>
            {show(part.output)}
          </pre>
        )}
        {part.state === 'output-error' && <p className="action-error">{part.errorText}</p>}
      </section>
    );
  }
  // Step boundaries, sources, files and data parts: this model sends none worth showing.
  return null;
}
