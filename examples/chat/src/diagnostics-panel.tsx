import type { Diagnostic } from 'lifeline';
import { useLifelineDiagnostics } from 'lifeline/react';
import { clock, describeDiagnostic } from './describe.js';

/** Noise in a log meant for people: a stream opening is implied by what follows, and a recovery of nothing is no news. */
const quiet = (d: Diagnostic): boolean => d.type === 'open' || d.type === 'duplicate' || (d.type === 'recovered' && d.events === 0);

export function DiagnosticsPanel() {
  const diagnostics = useLifelineDiagnostics(200);
  const shown = diagnostics.filter((d) => !quiet(d)).slice(-60).reverse();
  return (
    <section className="panel diagnostics" aria-label="Diagnostics">
      <header className="panel-header">
        <h2>Diagnostics</h2>
        <span className="muted">{shown.length === 0 ? 'quiet so far' : `${diagnostics.length} event${diagnostics.length === 1 ? '' : 's'}`}</span>
      </header>
      <ol className="log">
        {shown.map((d, i) => {
          const { text, tone } = describeDiagnostic(d);
          return (
            <li key={`${d.at}-${diagnostics.length - i}`} className={`log-line tone-${tone}`} data-diagnostic={d.type}>
              <time>{clock(d.at)}</time>
              <span>{text}</span>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
