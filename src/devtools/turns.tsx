'use client';
/** Every turn the client follows, and the chosen one's timeline and drills (`client.drill`). */
import { useState } from 'react';
import type { Diagnostic, DrillKind, LifelineClient, TurnSnapshot } from '../types.js';
import { clockTime, shortId } from './describe.js';
import * as css from './styles.js';
import { Timeline } from './timeline.js';

const DRILLS: readonly { drill: DrillKind; label: string; title: string }[] = [
  { drill: 'cut', label: 'Cut', title: 'Drop this turn’s open stream as a network cut would; the client reconnects from its last seq' },
  { drill: 'stall', label: 'Stall', title: 'Make this turn’s open stream deaf until the stall watchdog notices (after the real stall timeout)' },
  { drill: 'replay', label: 'Replay', title: 'Read a live turn from the server’s log; rebuild an ended one from seq 0 and check it again' },
];

const WHY_NOT: Record<DrillKind, string> = {
  cut: 'no stream of its own is open or opening (ended, replaying, or another tab streams)',
  stall: 'no stream of its own is open or opening (ended, replaying, or another tab streams)',
  replay: 'it is neither live nor ended and verified',
};

/** What the row has no room for. */
function facts(turn: TurnSnapshot): string[] {
  const { connection, recovered, stall, error } = turn;
  return [
    `turn ${turn.id}`,
    `${turn.text.length} chars`,
    ...(connection.nextRetryAt !== undefined ? [`retry at ${clockTime(connection.nextRetryAt)}`] : []),
    ...(stall ? [`stalled ${clockTime(stall.at)} (${stall.watchdog})`] : []),
    ...(recovered ? [`recovered by ${recovered.path}, ${recovered.events} event${recovered.events === 1 ? '' : 's'}`] : []),
    ...(error ? [error.code] : []),
  ];
}

function TurnRow({ turn, selected, onSelect }: { turn: TurnSnapshot; selected: boolean; onSelect: () => void }) {
  const { connection } = turn;
  return (
    <tr
      data-devtools-turn={turn.id}
      data-devtools-status={turn.status}
      data-devtools-connection={connection.state}
      aria-selected={selected}
      onClick={onSelect}
      style={{ cursor: 'pointer', background: selected ? css.colors.panel : undefined }}
    >
      <td style={css.cell} title={turn.id}>
        {shortId(turn.id)}
      </td>
      <td style={css.cell}>
        <span style={css.pill(css.STATUS_TONES[turn.status])}>{turn.status}</span>
      </td>
      <td style={css.cell}>{connection.state}</td>
      <td style={css.cell}>{turn.lastSeq}</td>
      <td style={css.cell}>{connection.attempt}</td>
    </tr>
  );
}

function Drills({ client, turnId }: { client: LifelineClient; turnId: string }) {
  const [answer, setAnswer] = useState<{ turnId: string; text: string }>();
  const run = (drill: DrillKind): void => {
    const applied = client.drill(turnId, drill);
    setAnswer({ turnId, text: applied ? `${drill}: done, watch the timeline` : `${drill}: not done, ${WHY_NOT[drill]}` });
  };
  return (
    <div style={{ display: 'flex', gap: 6, alignItems: 'center', flexWrap: 'wrap' }}>
      {DRILLS.map(({ drill, label, title }) => (
        <button key={drill} type="button" style={css.button} title={title} onClick={() => run(drill)}>
          {label}
        </button>
      ))}
      {answer?.turnId === turnId && (
        <span role="status" style={css.muted}>
          {answer.text}
        </span>
      )}
    </div>
  );
}

/** The turns table; the newest turn is shown in detail until another row is chosen. */
export function TurnsSection({ client, turns, timelines }: { client: LifelineClient; turns: readonly TurnSnapshot[]; timelines: ReadonlyMap<string, readonly Diagnostic[]> }) {
  const [chosen, setChosen] = useState<string>();
  const current = turns.find((turn) => turn.id === chosen) ?? turns[turns.length - 1];
  return (
    <section style={css.section} aria-label="Turns">
      <h3 style={css.heading}>Turns ({turns.length})</h3>
      {turns.length === 0 ? (
        <p style={{ ...css.muted, margin: 0 }}>No turn followed yet.</p>
      ) : (
        <table style={css.table}>
          <thead>
            <tr>
              {['turn', 'status', 'connection', 'seq', 'retries'].map((name) => (
                <th key={name} style={css.headCell} scope="col">
                  {name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {[...turns].reverse().map((turn) => (
              <TurnRow key={turn.id} turn={turn} selected={turn === current} onSelect={() => setChosen(turn.id)} />
            ))}
          </tbody>
        </table>
      )}
      {current && (
        <div data-devtools-detail={current.id} style={{ display: 'flex', flexDirection: 'column', gap: 6 }}>
          <div style={{ display: 'flex', justifyContent: 'space-between', gap: 8, flexWrap: 'wrap' }}>
            <span style={css.muted}>{facts(current).join(' · ')}</span>
            <Drills client={client} turnId={current.id} />
          </div>
          <Timeline entries={timelines.get(current.id) ?? []} label={`Timeline of turn ${current.id}`} />
        </div>
      )}
    </section>
  );
}
