import type { ActionState, JsonValue } from 'lifeline-chat';

interface Persona {
  name: string;
  role: string;
  goal: string;
}

/** Reads personas out of untrusted JSON; anything malformed is simply not listed. */
function personas(output: JsonValue | undefined): Persona[] {
  if (!Array.isArray(output)) return [];
  return output.flatMap((p) =>
    p !== null && typeof p === 'object' && !Array.isArray(p) && typeof p['name'] === 'string' && typeof p['role'] === 'string' && typeof p['goal'] === 'string'
      ? [{ name: p['name'], role: p['role'], goal: p['goal'] }]
      : [],
  );
}

const TITLES: Record<string, string> = { propose_personas: 'Proposed personas' };

export function ActionCard({ action }: { action: ActionState }) {
  const title = TITLES[action.name] ?? action.name;
  const list = action.name === 'propose_personas' ? personas(action.output) : [];
  return (
    <section className={`action action-${action.status}`} data-action-name={action.name} data-action-status={action.status} aria-label={title}>
      <header>
        <span className="action-icon" aria-hidden="true">
          {action.status === 'started' ? <span className="spinner" /> : action.status === 'completed' ? '✓' : '!'}
        </span>
        <strong>{title}</strong>
        <span className="muted">{action.status === 'started' ? 'working…' : action.status}</span>
      </header>
      {list.length > 0 ? (
        <ul className="personas">
          {list.map((p) => (
            <li key={p.name} className="persona" data-persona-name={p.name}>
              <span className="persona-avatar" aria-hidden="true">
                {p.name
                  .split(' ')
                  .map((w) => w[0])
                  .join('')
                  .slice(0, 2)}
              </span>
              <div>
                <div className="persona-name">{p.name}</div>
                <div className="persona-role">{p.role}</div>
                <div className="persona-goal">
                  <span className="label">Goal</span> {p.goal}
                </div>
              </div>
            </li>
          ))}
        </ul>
      ) : (
        action.status !== 'started' &&
        action.output !== undefined && <pre className="action-output">{JSON.stringify(action.output, null, 2)}</pre>
      )}
      {action.status === 'failed' && action.error !== undefined && <p className="action-error">{JSON.stringify(action.error)}</p>}
    </section>
  );
}
