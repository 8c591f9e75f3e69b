import { useConversation, useStorageStatus, type ConversationStatus } from 'lifeline/react';
import { useCallback, useState } from 'react';
import { Composer } from './composer.js';
import { conversationFromUrl, loadConversations, newConversationId, saveConversations, showInUrl, type ConversationMeta } from './conversations.js';
import { DiagnosticsPanel } from './diagnostics-panel.js';
import { FaultLab } from './fault-lab.js';
import { MessageList } from './messages.js';

function initialConversations(): { list: ConversationMeta[]; current: string } {
  const list = loadConversations();
  const current = conversationFromUrl() ?? list[0]?.id ?? newConversationId();
  if (!list.some((c) => c.id === current)) list.unshift({ id: current, title: 'New conversation' });
  saveConversations(list);
  showInUrl(current);
  return { list, current };
}

const BADGES: Record<ConversationStatus, { label: string; tone: string }> = {
  online: { label: 'Online', tone: 'good' },
  streaming: { label: 'Receiving', tone: 'live' },
  sending: { label: 'Sending', tone: 'live' },
  reconnecting: { label: 'Reconnecting', tone: 'warn' },
  recovering: { label: 'Recovering', tone: 'warn' },
  offline: { label: 'Offline', tone: 'bad' },
  failed: { label: 'Needs attention', tone: 'bad' },
};

function ConnectionBadge({ status }: { status: ConversationStatus }) {
  const badge = BADGES[status];
  return (
    <span className={`badge badge-${badge.tone}`} data-connection={status} role="status" aria-label={`Connection: ${badge.label}`}>
      <span className="dot" aria-hidden="true" />
      {badge.label}
    </span>
  );
}

function StorageLine() {
  const storage = useStorageStatus();
  const kind = storage.kind === 'indexeddb' ? 'IndexedDB' : storage.kind;
  const text = {
    opening: 'Opening local storage…',
    ok: `Saved on this device (${kind})`,
    memory: 'Kept in memory only',
    degraded: `Storage failed — keeping messages in memory${storage.cause ? `: ${storage.cause.message}` : ''}`,
  }[storage.state];
  return (
    <span className={`storage storage-${storage.state}`} data-storage-state={storage.state} title={text}>
      <svg viewBox="0 0 16 16" aria-hidden="true" width="14" height="14">
        <ellipse cx="8" cy="4" rx="5.5" ry="2" fill="none" stroke="currentColor" strokeWidth="1.4" />
        <path d="M2.5 4v8c0 1.1 2.5 2 5.5 2s5.5-.9 5.5-2V4M2.5 8c0 1.1 2.5 2 5.5 2s5.5-.9 5.5-2" fill="none" stroke="currentColor" strokeWidth="1.4" />
      </svg>
      {text}
    </span>
  );
}

export function App() {
  const [{ list, current }, setState] = useState(initialConversations);
  const conversation = useConversation(current);

  const select = useCallback((id: string) => {
    showInUrl(id);
    setState((s) => ({ ...s, current: id }));
  }, []);

  const create = useCallback(() => {
    const id = newConversationId();
    setState((s) => {
      const next = [{ id, title: 'New conversation' }, ...s.list];
      saveConversations(next);
      return { list: next, current: id };
    });
    showInUrl(id);
  }, []);

  const send = useCallback(
    (text: string) => {
      conversation.send(text);
      // The first message names the conversation in the sidebar.
      setState((s) => {
        const next = s.list.map((c) => (c.id === current && c.title === 'New conversation' ? { ...c, title: text.slice(0, 48) } : c));
        saveConversations(next);
        return { ...s, list: next };
      });
    },
    [conversation.send, current],
  );

  return (
    <div className="app">
      <header className="topbar">
        <div className="brand">
          <span className="logo" aria-hidden="true">
            <svg viewBox="0 0 24 24" width="18" height="18">
              <path d="M2 12h4l2.5-6 4 12 3-8 1.5 2H22" fill="none" stroke="currentColor" strokeWidth="2.2" strokeLinecap="round" strokeLinejoin="round" />
            </svg>
          </span>
          <strong>Lifeline</strong>
          <span className="muted">example chat</span>
        </div>
        <div className="topbar-status">
          <StorageLine />
          <ConnectionBadge status={conversation.status} />
        </div>
      </header>

      <nav className="sidebar" aria-label="Conversations">
        <button type="button" className="button new-chat" onClick={create}>
          + New conversation
        </button>
        <ul className="conversation-list">
          {list.map((c) => (
            <li key={c.id}>
              <button
                type="button"
                className={c.id === current ? 'conversation active' : 'conversation'}
                aria-current={c.id === current ? 'page' : undefined}
                onClick={() => select(c.id)}
              >
                {c.title}
              </button>
            </li>
          ))}
        </ul>
      </nav>

      <main className="chat">
        <MessageList conversationId={current} conversation={conversation} onSend={send} />
        <Composer onSend={send} />
      </main>

      <aside className="side">
        <FaultLab />
        <DiagnosticsPanel />
      </aside>
    </div>
  );
}
