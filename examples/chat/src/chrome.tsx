/** The frame both pages share: the top bar (brand, page links, storage, connection) and the conversation sidebar. */
import { useStorageStatus, type ConversationStatus } from 'lifeline-chat/react';
import type { ConversationMeta } from './conversations.js';

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

const PAGES = [
  { href: '/', label: 'Lifeline hooks', page: 'hooks' },
  { href: '/ai', label: 'AI SDK useChat', page: 'ai' },
  { href: '/support', label: 'Support', page: 'support' },
] as const;

/** The example's pages, the current one as plain text. */
function PageLinks({ current }: { current: (typeof PAGES)[number]['page'] }) {
  return (
    <nav className="page-links" aria-label="Example pages">
      {PAGES.map((p) =>
        p.page === current ? (
          <span key={p.page} className="page-link current">
            {p.label}
          </span>
        ) : (
          <a key={p.page} className="page-link" href={p.href}>
            {p.label}
          </a>
        ),
      )}
    </nav>
  );
}

/** The logo, the name and the page links: the top bar's left side, on every page. */
export function Brand({ page, subtitle }: { page: (typeof PAGES)[number]['page']; subtitle: string }) {
  return (
    <div className="brand">
      <span className="logo" aria-hidden="true">
        <svg viewBox="0 0 24 24" width="18" height="18">
          <path d="M2 12h4l2.5-6 4 12 3-8 1.5 2H22" fill="none" stroke="currentColor" strokeWidth="2.2" strokeLinecap="round" strokeLinejoin="round" />
        </svg>
      </span>
      <strong>Lifeline</strong>
      <span className="muted">{subtitle}</span>
      <PageLinks current={page} />
    </div>
  );
}

export function TopBar({ page, subtitle, status }: { page: 'hooks' | 'ai'; subtitle: string; status: ConversationStatus }) {
  return (
    <header className="topbar">
      <Brand page={page} subtitle={subtitle} />
      <div className="topbar-status">
        <StorageLine />
        <ConnectionBadge status={status} />
      </div>
    </header>
  );
}

export function ConversationNav({
  list,
  current,
  onSelect,
  onCreate,
}: {
  list: readonly ConversationMeta[];
  current: string;
  onSelect: (id: string) => void;
  onCreate: () => void;
}) {
  return (
    <nav className="sidebar" aria-label="Conversations">
      <button type="button" className="button new-chat" onClick={onCreate}>
        + New conversation
      </button>
      <ul className="conversation-list">
        {list.map((c) => (
          <li key={c.id}>
            <button
              type="button"
              className={c.id === current ? 'conversation active' : 'conversation'}
              aria-current={c.id === current ? 'page' : undefined}
              onClick={() => onSelect(c.id)}
            >
              {c.title}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
