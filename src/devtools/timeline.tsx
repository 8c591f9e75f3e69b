'use client';
import type { Diagnostic } from '../types.js';
import { clockTime, describe } from './describe.js';
import * as css from './styles.js';

/** Diagnostics newest first, each with its wall-clock time; `limit` of them (default all kept). */
export function Timeline({ entries, label, limit }: { entries: readonly Diagnostic[]; label: string; limit?: number }) {
  const shown = entries.slice(limit === undefined ? 0 : -limit).reverse();
  if (shown.length === 0) return <p style={{ ...css.muted, margin: 0 }}>No diagnostics yet.</p>;
  return (
    <ol style={css.log} aria-label={label}>
      {shown.map((d, index) => {
        const { text, tone } = describe(d);
        return (
          <li key={entries.length - index} data-diagnostic={d.type} style={{ display: 'flex', gap: 8, padding: '1px 0' }}>
            <time style={css.muted}>{clockTime(d.at)}</time>
            <span style={{ color: css.TONES[tone] }}>{text}</span>
          </li>
        );
      })}
    </ol>
  );
}
