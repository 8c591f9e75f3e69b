/**
 * The AI page's tools, as the page sees them: `locate` is a client-side tool (the page answers
 * it with `addToolOutput`, by itself when the call arrives live and "answer automatically" is on,
 * else with a click), `transfer` needs an approval (Approve or Deny, `addToolApprovalResponse`).
 * useChat then sends the answered message by itself (`sendAutomaticallyWhen`), as a
 * continuation of the same message (docs/protocol.md §9).
 */
import { getToolName, isToolUIPart, type UIMessage } from 'ai';
import { useState } from 'react';
import { CITIES } from './ai-request.js';

type Part = UIMessage['parts'][number];

/** How the page answers tool calls: what useChat's answer functions need. */
export interface ToolAnswers {
  locate(toolCallId: string, city: string): void;
  approve(approvalId: string, approved: boolean): void;
}

const AUTO_KEY = 'lifeline-example:auto-locate';

/** Whether `locate` is answered without asking, kept across reloads (default on). */
export function useAutoLocate(): [boolean, (on: boolean) => void] {
  const [on, setOn] = useState(() => localStorage.getItem(AUTO_KEY) !== 'off');
  return [on, (next) => (localStorage.setItem(AUTO_KEY, next ? 'on' : 'off'), setOn(next))];
}

/** The buttons under a tool call that waits for the page: a city to share, or an approval. */
export function ToolActions({ part, answers, disabled }: { part: Part; answers: ToolAnswers; disabled: boolean }) {
  if (!isToolUIPart(part)) return null;
  const name = getToolName(part);
  if (name === 'locate' && part.state === 'input-available') {
    return (
      <div className="tool-actions" role="group" aria-label="Answer locate">
        <span className="muted">The model asks where you are. Answer:</span>
        {CITIES.map((city) => (
          <button key={city} type="button" className="button small" disabled={disabled} onClick={() => answers.locate(part.toolCallId, city)}>
            {`Share ${city}`}
          </button>
        ))}
      </div>
    );
  }
  if (part.state === 'approval-requested') {
    return (
      <div className="tool-actions" role="group" aria-label={`Approve ${name}`}>
        <span className="muted">{`The model wants to run ${name} with this input. It runs on the server only if you approve.`}</span>
        <button type="button" className="button small" disabled={disabled} onClick={() => answers.approve(part.approval.id, true)}>
          Approve
        </button>
        <button type="button" className="button small" disabled={disabled} onClick={() => answers.approve(part.approval.id, false)}>
          Deny
        </button>
      </div>
    );
  }
  return null;
}

/** The side panel that says what the tools do and holds the one setting. */
export function ToolsPanel({ autoLocate, onAutoLocate }: { autoLocate: boolean; onAutoLocate: (on: boolean) => void }) {
  return (
    <section className="panel" aria-label="Tools">
      <header className="panel-header">
        <h2>Tools</h2>
        <span className="muted">survive a reload</span>
      </header>
      <p className="muted">
        “Where am I?” calls <code>locate</code>, which this page answers. “Transfer 5 to Bob” calls <code>transfer</code>, which waits for your approval
        and then runs on the server, once. Each answer is written down on this device before it is sent: reload, cut the stream or answer again in
        another tab, and the model still gets it exactly once.
      </p>
      <label className="checkbox">
        <input type="checkbox" checked={autoLocate} onChange={(event) => onAutoLocate(event.target.checked)} />
        {` Answer locate automatically with ${CITIES[0]} (when the call arrives while this page is open; after a reload it asks you)`}
      </label>
    </section>
  );
}
