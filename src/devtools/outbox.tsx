'use client';
/** The outbox queue (`client.outbox`): each submission's state, attempts, next attempt and last diagnostics. */
import type { Diagnostic, LifelineClient, OutboxEntry } from '../types.js';
import { clockTime, shortId } from './describe.js';
import * as css from './styles.js';
import { Timeline } from './timeline.js';

const TONE = { queued: 'warn', sending: 'info', accepted: 'good', failed: 'bad' } as const;

function nextAttempt(entry: OutboxEntry): string {
  if (entry.state === 'failed') return entry.lastError ? `gave up: ${entry.lastError.code}` : 'gave up';
  if (entry.state !== 'queued') return '';
  return `due ${clockTime(entry.nextAttemptAt)}${entry.lastError ? ` after ${entry.lastError.code}` : ''}`;
}

function EntryRow({ client, entry, timeline }: { client: LifelineClient; entry: OutboxEntry; timeline: readonly Diagnostic[] }) {
  // The outbox's own promises reject only for misuse or dispose: the panel then shows the entry as it is.
  const act = (action: Promise<void>): void => void action.catch(() => undefined);
  return (
    <li data-devtools-operation={entry.operationId} data-devtools-state={entry.state} style={{ display: 'flex', flexDirection: 'column', gap: 3, padding: '4px 0', borderBottom: `1px solid ${css.colors.line}` }}>
      <div style={{ display: 'flex', gap: 10, alignItems: 'center', flexWrap: 'wrap' }}>
        <span title={entry.operationId}>{shortId(entry.operationId)}</span>
        <span style={css.pill(TONE[entry.state])}>{entry.state}</span>
        <span style={css.muted}>
          {entry.conversationId} · attempts {entry.attempts}
        </span>
        <span style={css.muted}>{nextAttempt(entry)}</span>
        <span style={{ flex: 1 }} />
        {entry.state === 'failed' && (
          <button type="button" style={css.button} onClick={() => act(client.outbox.retry(entry.operationId))}>
            Retry
          </button>
        )}
        {entry.state !== 'accepted' && (
          <button type="button" style={css.button} onClick={() => act(client.outbox.discard(entry.operationId))}>
            Discard
          </button>
        )}
      </div>
      <Timeline entries={timeline} label={`Diagnostics of submission ${entry.operationId}`} limit={3} />
    </li>
  );
}

export function OutboxSection({ client, entries, timelines }: { client: LifelineClient; entries: readonly OutboxEntry[]; timelines: ReadonlyMap<string, readonly Diagnostic[]> }) {
  return (
    <section style={css.section} aria-label="Outbox">
      <h3 style={css.heading}>Outbox ({entries.length})</h3>
      {entries.length === 0 ? (
        <p style={{ ...css.muted, margin: 0 }}>Empty: every message was accepted.</p>
      ) : (
        <ul style={{ listStyle: 'none', margin: 0, padding: 0 }}>
          {entries.map((entry) => (
            <EntryRow key={entry.operationId} client={client} entry={entry} timeline={timelines.get(entry.operationId) ?? []} />
          ))}
        </ul>
      )}
    </section>
  );
}
