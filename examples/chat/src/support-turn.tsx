/** One turn on the support page: who and where, what the user asked, its actions' JSON, and (stuck) an End button. */
import type { OperatorTurn } from 'lifeline-chat/server';
import { useState } from 'react';
import type { SupportList, TurnDetail } from './support-api.js';

function ago(iso: string, now: number): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min ago` : `${Math.round(minutes / 60)} h ago`;
}

/** The user's message as text: a string, the AI SDK's `UIMessage` text parts, or the JSON it is. */
function askedText(content: OperatorTurn['content']): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  const parts = content['parts'];
  if (Array.isArray(parts)) {
    const texts = parts.flatMap((part) => (typeof part === 'object' && part !== null && !Array.isArray(part) && typeof part['text'] === 'string' ? [part['text']] : []));
    if (texts.length > 0) return texts.join(' ');
  }
  return typeof content['text'] === 'string' ? content['text'] : JSON.stringify(content);
}

/** What an action's JSON is at each status: its input while it runs, then its output or its error. */
const JSON_LABEL = { started: 'input', completed: 'output', failed: 'error' } as const;

function Actions({ detail }: { detail: TurnDetail | undefined }) {
  if (detail === undefined) return <p className="muted">Reading the turn…</p>;
  if (detail.actions.length === 0) return <p className="muted">No actions in this turn.</p>;
  return (
    <>
      {detail.actions.map((action) => (
        <div key={action.callId} className="support-action" data-action-name={action.name} data-action-status={action.status}>
          <div className="support-action-head">
            <code>{action.name}</code>
            <span className={`chip chip-${action.status === 'completed' ? 'good' : action.status === 'failed' ? 'bad' : 'live'}`}>{action.status}</span>
          </div>
          {/* Rendered as text: the JSON is whatever the agent logged. */}
          <pre className="action-output">
            <span className="label">{JSON_LABEL[action.status]}</span>
            <code data-action-json="">{JSON.stringify(action.status === 'failed' ? action.error : action.status === 'completed' ? action.output : action.input, null, 2)}</code>
          </pre>
        </div>
      ))}
    </>
  );
}

function EndForm({ onEnd }: { onEnd: (reason: string) => Promise<void> }) {
  const [phase, setPhase] = useState<{ kind: 'idle' } | { kind: 'asking'; reason: string } | { kind: 'ending' }>({ kind: 'idle' });
  if (phase.kind === 'idle') {
    return (
      <button type="button" className="button small" onClick={() => setPhase({ kind: 'asking', reason: '' })}>
        End…
      </button>
    );
  }
  const reason = phase.kind === 'asking' ? phase.reason : '';
  return (
    <form
      className="support-end"
      onSubmit={(event) => {
        event.preventDefault();
        if (reason.trim() === '') return;
        setPhase({ kind: 'ending' });
        void onEnd(reason).finally(() => setPhase({ kind: 'idle' }));
      }}
    >
      <input
        aria-label="Reason"
        placeholder="Reason, shown to the user"
        maxLength={1000}
        value={reason}
        disabled={phase.kind === 'ending'}
        onChange={(event) => setPhase({ kind: 'asking', reason: event.target.value })}
        autoFocus
      />
      <button type="submit" className="button small primary" disabled={phase.kind === 'ending' || reason.trim() === ''}>
        End turn
      </button>
      <button type="button" className="button small ghost" disabled={phase.kind === 'ending'} onClick={() => setPhase({ kind: 'idle' })}>
        Cancel
      </button>
    </form>
  );
}

export function SupportTurn({
  list,
  turn,
  detail,
  now,
  onEnd,
}: {
  list: SupportList;
  turn: OperatorTurn;
  detail: TurnDetail | undefined;
  now: number;
  onEnd: (reason: string) => Promise<void>;
}) {
  const since = list === 'stuck' ? `quiet since ${ago(turn.updatedAt, now)}` : `ended ${ago(turn.updatedAt, now)}, no receipt`;
  return (
    <li className="support-turn" data-turn-id={turn.id} data-status={turn.status} data-delivery={turn.delivery?.state ?? 'pending'}>
      <div className="support-turn-head">
        <code className="support-id" title="Turn id">
          {turn.id}
        </code>
        <span className={`chip chip-${list === 'stuck' ? 'warn' : 'bad'}`}>{turn.status}</span>
        <span className="muted">{since}</span>
        <span className="support-spacer" />
        {list === 'stuck' && <EndForm onEnd={onEnd} />}
      </div>
      <dl className="support-facts">
        <dt>Principal</dt>
        <dd data-principal="">{turn.principal}</dd>
        <dt>Conversation</dt>
        <dd>
          <code>{turn.conversationId}</code>
        </dd>
        <dt>Asked</dt>
        <dd className="support-asked">{askedText(turn.content)}</dd>
        {detail !== undefined && detail.text !== '' && (
          <>
            <dt>Answer</dt>
            <dd className="support-answer">{detail.text}</dd>
          </>
        )}
      </dl>
      <Actions detail={detail} />
    </li>
  );
}
