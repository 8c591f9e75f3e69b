'use client';
/**
 * The devtools panel: reads only the client's public stores (`turns`, `outbox`,
 * `storageStatus`) through `useSyncExternalStore`, plus a recorder of `diagnostics`, and calls
 * only `client.drill`, `client.outbox.retry` and `client.outbox.discard`.
 */
import { useState, useSyncExternalStore, type CSSProperties } from 'react';
import type { ExternalStore, LifelineClient } from '../types.js';
import { OutboxSection } from './outbox.js';
import { recorderOf } from './recorder.js';
import { StorageSection } from './storage.js';
import * as css from './styles.js';
import { TurnsSection } from './turns.js';

export interface LifelineDevtoolsProps {
  /** The client to show (the one `createLifeline` returned). */
  client: LifelineClient;
  /**
   * `true`: the panel is drawn in place, always open (a side column, a test page). Default
   * `false`: a "Lifeline" button floats at the bottom right and opens the panel over the page.
   */
  embedded?: boolean;
  /** For the floating panel: open on first render. Default `false`. */
  initialIsOpen?: boolean;
}

const useStore = <S,>(store: ExternalStore<S>): S => useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);

function Panel({ client, onClose, style }: { client: LifelineClient; onClose?: () => void; style: CSSProperties }) {
  const turns = useStore(client.turns);
  const outbox = useStore(client.outbox);
  const storage = useStore(client.storageStatus);
  const history = useStore(recorderOf(client));
  return (
    <aside aria-label="Lifeline devtools" data-lifeline-devtools="" style={style}>
      <header style={{ display: 'flex', alignItems: 'center', gap: 8 }}>
        <h2 style={{ ...css.heading, fontSize: 12 }}>Lifeline devtools</h2>
        <span style={{ ...css.muted, flex: 1 }}>diagnostics since first render</span>
        {onClose && (
          <button type="button" style={css.button} onClick={onClose} aria-label="Close Lifeline devtools">
            ×
          </button>
        )}
      </header>
      <TurnsSection client={client} turns={turns} timelines={history.turns} />
      <OutboxSection client={client} entries={outbox} timelines={history.submissions} />
      <StorageSection status={storage} timeline={history.client} />
    </aside>
  );
}

/**
 * The panel, in every build. `lifeline-chat/devtools` exports this in development and a component
 * that renders nothing in production; `lifeline-chat/devtools/production` exports this always.
 *
 * @example
 * <LifelineDevtools client={client} />                 // a floating button, bottom right
 * <LifelineDevtools client={client} embedded />        // in place, always open
 */
export function LifelineDevtoolsPanel({ client, embedded = false, initialIsOpen = false }: LifelineDevtoolsProps) {
  // Recording starts with the first render, open or not, so opening the panel later shows what happened.
  recorderOf(client);
  const [open, setOpen] = useState(initialIsOpen);
  if (embedded) return <Panel client={client} style={css.root} />;
  if (!open)
    return (
      <button type="button" style={css.toggle} onClick={() => setOpen(true)} aria-label="Open Lifeline devtools">
        Lifeline
      </button>
    );
  return <Panel client={client} onClose={() => setOpen(false)} style={{ ...css.root, ...css.floating }} />;
}
