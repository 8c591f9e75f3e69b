'use client';
/** Storage health (`client.storageStatus`) and what the client said about itself (storage, network). */
import type { Diagnostic, StorageStatus } from '../types.js';
import * as css from './styles.js';
import { Timeline } from './timeline.js';

const TONE = { opening: 'info', ok: 'good', memory: 'info', degraded: 'bad' } as const;

export function StorageSection({ status, timeline }: { status: StorageStatus; timeline: readonly Diagnostic[] }) {
  return (
    <section style={css.section} aria-label="Storage">
      <h3 style={css.heading}>Storage and client</h3>
      <div data-devtools-storage={status.state} style={{ display: 'flex', gap: 10, flexWrap: 'wrap' }}>
        <span style={css.pill(TONE[status.state])}>{status.state}</span>
        <span>{status.kind}</span>
        {status.persisted !== undefined && <span style={css.muted}>{status.persisted ? 'persistent' : 'not persistent'}</span>}
        {status.cause && <span style={{ color: css.TONES.bad }}>{`${status.cause.code}: ${status.cause.message}`}</span>}
      </div>
      <Timeline entries={timeline} label="Client diagnostics" limit={20} />
    </section>
  );
}
