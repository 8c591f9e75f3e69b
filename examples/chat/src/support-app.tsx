/**
 * The support page: the turns that are stuck and the ones never delivered, polled from the
 * operator API (docs/protocol.md section 11), each with its actions' JSON; a stuck one can be
 * ended with a reason, and the API's answer to that is shown whole.
 */
import type { OperatorTurn } from 'lifeline-chat/server';
import { useCallback, useEffect, useRef, useState } from 'react';
import { Brand } from './chrome.js';
import { exampleConfig, type ExampleConfig } from './example-config.js';
import { detailOf, endPath, listPath, operatorRequest, showPath, turnsOf, type OperatorAnswer, type SupportList, type TurnDetail } from './support-api.js';
import { SupportTurn } from './support-turn.js';

/** How often the lists are asked again, ms: "live" for a person watching, light on the server. */
const POLL_MS = 1000;
const TOKEN_KEY = 'lifeline-example:operator-token';
const LISTS: readonly SupportList[] = ['stuck', 'undelivered'];

type Config = { phase: 'loading' } | { phase: 'failed'; message: string } | { phase: 'ready'; config: ExampleConfig };
type Lists = { phase: 'waiting' } | { phase: 'refused' } | { phase: 'shown'; turns: Record<SupportList, OperatorTurn[]>; at: number };

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Polls both lists while a token is set; fetches a turn's detail again only when its log grew. */
function useSupportLists(token: string) {
  const [lists, setLists] = useState<Lists>({ phase: 'waiting' });
  const [details, setDetails] = useState<ReadonlyMap<string, TurnDetail>>(new Map());
  const known = useRef(new Map<string, TurnDetail>());
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((n) => n + 1), []);

  useEffect(() => {
    if (token === '') return setLists({ phase: 'waiting' });
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const answers = await Promise.all(LISTS.map((list) => operatorRequest(token, 'GET', listPath(list))));
        if (stopped) return;
        if (answers.some((answer) => answer.status === 404)) setLists({ phase: 'refused' });
        else {
          const [stuck = [], undelivered = []] = answers.map(turnsOf);
          const shown = [...stuck, ...undelivered];
          const stale = shown.filter((turn) => known.current.get(turn.id)?.lastSeq !== turn.lastSeq);
          const read = await Promise.all(stale.map((turn) => operatorRequest(token, 'GET', showPath(turn.id))));
          if (stopped) return;
          // Only the shown turns are kept: a turn that left both lists is forgotten.
          for (const id of known.current.keys()) if (!shown.some((turn) => turn.id === id)) known.current.delete(id);
          read.forEach((answer, i) => {
            const detail = detailOf(answer);
            if (detail) known.current.set((stale[i] as OperatorTurn).id, detail);
          });
          setDetails(new Map(known.current));
          setLists({ phase: 'shown', turns: { stuck, undelivered }, at: Date.now() });
        }
      } catch {
        // The server is down or restarting: keep what is shown and ask again.
      }
      if (!stopped) timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [token, tick]);
  return { lists, details, refresh };
}

function TokenForm({ token, onToken }: { token: string; onToken: (token: string) => void }) {
  const [draft, setDraft] = useState(token);
  return (
    <form
      className="support-token"
      onSubmit={(event) => {
        event.preventDefault();
        onToken(draft.trim());
      }}
    >
      <input type="password" aria-label="Operator token" placeholder="OPERATOR_TOKEN" value={draft} onChange={(event) => setDraft(event.target.value)} />
      <button type="submit" className="button small">
        {token === '' ? 'Sign in' : 'Change'}
      </button>
    </form>
  );
}

function AnswerPanel({ answer }: { answer: OperatorAnswer | undefined }) {
  return (
    <section className="panel support-answer-panel" aria-label="Operator API answer">
      <div className="panel-header">
        <h2>Operator API answer</h2>
      </div>
      {answer && <p className="muted support-request">{`${answer.method} ${answer.path.replace('/api', '')} → ${answer.status}`}</p>}
      {answer ? (
        <pre className="action-output" data-last-answer="">
          {JSON.stringify(answer.body, null, 2)}
        </pre>
      ) : (
        <p className="muted">End a turn to see the API's answer here.</p>
      )}
    </section>
  );
}

export function SupportApp() {
  const [config, setConfig] = useState<Config>({ phase: 'loading' });
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? '');
  const [answer, setAnswer] = useState<OperatorAnswer>();
  const { lists, details, refresh } = useSupportLists(config.phase === 'ready' && config.config.operatorApi ? token : '');

  useEffect(() => {
    exampleConfig().then(
      (config) => setConfig({ phase: 'ready', config }),
      (error: unknown) => setConfig({ phase: 'failed', message: error instanceof Error ? error.message : String(error) }),
    );
  }, []);
  const saveToken = (next: string) => {
    sessionStorage.setItem(TOKEN_KEY, next);
    setToken(next);
  };
  const end = async (turnId: string, reason: string) => {
    const path = endPath(turnId);
    try {
      setAnswer(await operatorRequest(token, 'POST', path, { reason }));
    } catch (error) {
      // No answer at all: shown in the same place, so the operator knows the end may not have happened.
      setAnswer({ method: 'POST', path, status: 0, body: { error: { code: 'no_answer', message: error instanceof Error ? error.message : String(error) } } });
    }
    refresh();
  };

  return (
    <div className="support">
      <header className="topbar">
        <Brand page="support" subtitle="support" />
        {config.phase === 'ready' && config.config.operatorApi && <TokenForm token={token} onToken={saveToken} />}
      </header>
      <main className="support-main">
        <Notice config={config} token={token} lists={lists} />
        {lists.phase === 'shown' && (
          <div className="support-columns">
            <div className="support-lists">
              {LISTS.map((list) => (
                <section key={list} className="panel" data-support-list={list} aria-label={list === 'stuck' ? 'Stuck turns' : 'Undelivered turns'}>
                  <div className="panel-header">
                    <h2>{list === 'stuck' ? 'Stuck' : 'Undelivered'}</h2>
                    <span className="muted" data-count="">
                      {lists.turns[list].length}
                    </span>
                  </div>
                  {lists.turns[list].length === 0 ? (
                    <p className="muted">{list === 'stuck' ? 'No live turn is quiet.' : 'Every ended turn reached its user.'}</p>
                  ) : (
                    <ul className="support-turns">
                      {lists.turns[list].map((turn) => (
                        <SupportTurn key={turn.id} list={list} turn={turn} detail={details.get(turn.id)} now={lists.at} onEnd={(reason) => end(turn.id, reason)} />
                      ))}
                    </ul>
                  )}
                </section>
              ))}
            </div>
            <AnswerPanel answer={answer} />
          </div>
        )}
      </main>
    </div>
  );
}

function Notice({ config, token, lists }: { config: Config; token: string; lists: Lists }) {
  if (config.phase === 'loading') return <p className="muted">Asking the server…</p>;
  if (config.phase === 'failed') return <p className="support-notice bad">The server did not answer: {config.message}</p>;
  const { operatorApi, stuckAfterMs, undeliveredAfterMs } = config.config;
  if (!operatorApi) {
    return (
      <p className="support-notice" data-operator-api="off">
        The operator API is off. Start the example server with <code>OPERATOR_TOKEN=…</code> to turn it on.
      </p>
    );
  }
  if (token === '') return <p className="support-notice">Sign in with the server's operator token (it is sent as <code>Authorization: Bearer …</code>).</p>;
  if (lists.phase === 'refused') return <p className="support-notice bad">The server refused this token (a refused operator request answers 404, like an unknown route).</p>;
  return (
    <p className="muted support-windows" data-operator-api="on">
      {`Stuck: live with nothing logged for ${seconds(stuckAfterMs)}. Undelivered: ended ${seconds(undeliveredAfterMs)} ago or more with no receipt. Updated every ${seconds(POLL_MS)}`}
      {lists.phase === 'shown' && `, last at ${new Date(lists.at).toLocaleTimeString()}`}.
    </p>
  );
}
