import type { JsonValue, MessagePart } from 'lifeline-chat';

const show = (value: JsonValue | undefined): string => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/**
 * One structured part of an answer that is not its plain text: a reasoning part
 * (`{ type: 'reasoning', text }`) or a tool call (`{ type: 'tool-<name>', input, output }`,
 * the shape of an AI SDK tool part). Other parts are not shown. Text parts are left to the
 * answer's text, which shows every delta.
 */
export function PartView({ part }: { part: MessagePart }) {
  if (part.type === 'reasoning' && typeof part.text === 'string') {
    return (
      <details className="reasoning" data-part="reasoning">
        <summary>Reasoning</summary>
        <p>{part.text}</p>
      </details>
    );
  }
  if (part.type.startsWith('tool-') && 'toolCallId' in part) {
    const name = part.type.slice('tool-'.length);
    const state = typeof part['state'] === 'string' ? part['state'] : 'input-available';
    return (
      <section className="action action-completed" data-part="tool" data-tool-name={name} data-tool-state={state} aria-label={`Tool ${name}`}>
        <header>
          <span className="action-icon" aria-hidden="true">
            {state === 'output-available' ? '✓' : <span className="spinner" />}
          </span>
          <strong>{name}</strong>
          <span className="muted">{state}</span>
        </header>
        <pre className="action-output">{show(part['input'] as JsonValue | undefined)}</pre>
        {part['output'] !== undefined && <pre className="action-output">{show(part['output'] as JsonValue)}</pre>}
      </section>
    );
  }
  return null;
}
