import { useState, useSyncExternalStore } from 'react';
import { isLabOffline, rawFetch, setLabOffline, subscribeLabOffline } from './lab-network.js';

interface LabAnswer {
  cut?: number;
  stalled?: number;
  downForMs?: number;
  openStreams?: number;
  failNextSubmissions?: number;
}

async function lab(action: string): Promise<LabAnswer> {
  const response = await rawFetch(`/__lab/${action}`, { method: 'POST' });
  if (!response.ok) throw new Error(`The lab answered ${response.status}`);
  return (await response.json()) as LabAnswer;
}

const plural = (n: number | undefined, word: string) => `${n ?? 0} ${word}${n === 1 ? '' : 's'}`;

/**
 * Buttons that break the connection on purpose. Cut, stall, restart and 503s happen in
 * the example server; "offline" happens here, in the page.
 */
export function FaultLab() {
  const offline = useSyncExternalStore(subscribeLabOffline, isLabOffline);
  const [failCount, setFailCount] = useState(2);
  const [note, setNote] = useState('Break things while an answer streams.');

  function run(action: string, describe: (answer: LabAnswer) => string) {
    lab(action).then(
      (answer) => setNote(describe(answer)),
      (error: unknown) => setNote(`Lab request failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  return (
    <section className="panel lab" aria-label="Fault lab">
      <header className="panel-header">
        <h2>Fault lab</h2>
        <span className="muted">example only</span>
      </header>
      <div className="lab-grid">
        <button type="button" className="button" onClick={() => run('cut', (a) => `Cut ${plural(a.cut, 'open stream')}.`)} title="Destroy every open stream's socket, like a dropped connection">
          Cut stream
        </button>
        <button
          type="button"
          className="button"
          onClick={() => run('stall', (a) => `Stalled ${plural(a.stalled, 'stream')}: sockets stay open, no bytes flow.`)}
          title="Keep the sockets open but stop sending bytes; the client's stall watchdog must notice"
        >
          Stall stream
        </button>
        <button
          type="button"
          className="button"
          onClick={() => run('restart', (a) => `Server down for ${((a.downForMs ?? 0) / 1000).toFixed(0)} s, then back.`)}
          title="Drop every connection and refuse new ones for a few seconds"
        >
          Restart server
        </button>
        <button
          type="button"
          className={offline ? 'button toggled' : 'button'}
          aria-pressed={offline}
          onClick={() => {
            setLabOffline(!offline);
            setNote(offline ? 'Back online.' : 'Offline: new requests fail until you go back online.');
          }}
        >
          {offline ? 'Go back online' : 'Go offline'}
        </button>
      </div>
      <div className="lab-fail">
        <button
          type="button"
          className="button"
          onClick={() => run(`fail-submissions?count=${failCount}`, (a) => `The next ${plural(a.failNextSubmissions, 'submission')} will get 503.`)}
        >
          {`Fail next ${failCount === 1 ? 'send' : `${failCount} sends`} with 503`}
        </button>
        <label>
          <span className="visually-hidden">How many submissions to fail</span>
          <input type="number" min={1} max={10} value={failCount} onChange={(e) => setFailCount(Math.max(1, Number(e.target.value) || 1))} />
        </label>
      </div>
      <p className="lab-note" role="status">
        {note}
      </p>
    </section>
  );
}
