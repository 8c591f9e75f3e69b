/**
 * The soak's page side, bundled (with the BUILT `lifeline-chat` package) into an init script
 * that runs at the start of every load of a soak tab, so a reload restarts it exactly
 * as an app would start. It follows every turn the client knows, and reports each
 * applied event, each attach (with the state the turn already had), each completion and
 * every error to the soak process through the `__soakRecord` binding.
 */
import { createLifeline, type Diagnostic, type LifelineClient } from 'lifeline-chat';
import { canonicalJson } from './canonical.js';

/** What the soak passes to each tab's init script. */
export interface DriverConfig {
  tab: string;
  namespace: string;
  origin: string;
  idleMs: number;
  firstEventMs: number;
}

export type SoakMessage =
  | { k: 'ready'; tab: string; session: number }
  | { k: 'attach'; tab: string; session: number; turnId: string; baseline: number }
  /** A followed turn took stored events (another tab or an earlier page wrote them): its state jumped to `seq`. */
  | { k: 'restored'; tab: string; session: number; turnId: string; seq: number }
  | { k: 'applied'; tab: string; session: number; turnId: string; seq: number; event: string }
  | { k: 'done'; tab: string; session: number; turnId: string; status: string; lastSeq: number; textLength: number; sha: string; error?: string }
  | { k: 'recovered'; tab: string; session: number; turnId: string; path: string; events: number }
  | { k: 'diagnostic'; tab: string; session: number; type: string; detail: string }
  | { k: 'error'; tab: string; session: number; message: string };

/** The page-side API the soak calls with `page.evaluate`. */
export interface SoakDriver {
  send(conversationId: string, index: number): void;
  follow(turnId: string): void;
  /** Outbox entries not yet accepted. */
  outboxSize(): number;
  /** The final check of one turn: the snapshot's text and the text IndexedDB holds, as SHA-256. */
  verify(turnId: string): Promise<{ status: string; lastSeq: number; pageSha: string; storedSha: string | null; storedStatus: string | null }>;
}

declare global {
  interface Window {
    __soakRecord?: (message: SoakMessage) => Promise<void>;
    __soak?: SoakDriver;
  }
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Reads a turn's text straight from IndexedDB (the folded row, else its chunks), bypassing the client. */
async function storedText(namespace: string, turnId: string): Promise<{ text: string; status: string } | null> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(`lifeline:${namespace}`);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    const tx = db.transaction(['turns', 'chunks'], 'readonly');
    const get = <T>(request: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
    const row = await get(tx.objectStore('turns').get(turnId) as IDBRequest<{ status: string; text?: string } | undefined>);
    if (!row) return null;
    if (typeof row.text === 'string') return { text: row.text, status: row.status };
    const chunks = await get(
      tx.objectStore('chunks').getAll(IDBKeyRange.bound([turnId, 0], [turnId, Infinity])) as IDBRequest<{ events: { type: string; text?: string }[] }[]>,
    );
    let text = '';
    for (const chunk of chunks) for (const event of chunk.events) if (event.type === 'delta') text += event.text ?? '';
    return { text, status: row.status };
  } finally {
    db.close();
  }
}

/** What the driver's parts share within one page load. */
interface PageLoad {
  client: LifelineClient;
  tab: string;
  session: number;
  record: (message: SoakMessage) => void;
  /** Turns followed in this load. */
  followed: Set<string>;
}

/** Sends messages to the soak through its binding (kept while the binding is not there yet), and every uncaught error with them. */
function createRecord(tab: string, session: number): (message: SoakMessage) => void {
  const backlog: SoakMessage[] = [];
  const record = (message: SoakMessage): void => {
    // The binding exists from the first script on; the backlog only covers a miss.
    const binding = window.__soakRecord;
    if (!binding) {
      backlog.push(message);
      return;
    }
    while (backlog.length > 0) void binding(backlog.shift()!);
    void binding(message);
  };
  addEventListener('unhandledrejection', (event) => {
    record({ k: 'error', tab, session, message: `unhandled rejection: ${String((event.reason as Error)?.stack ?? event.reason)}` });
  });
  addEventListener('error', (event) => record({ k: 'error', tab, session, message: `uncaught: ${event.message}` }));
  return record;
}

/** Follows a turn once per load: its attach baseline, every event it applies, and how it ends. */
function follow({ client, tab, session, record, followed }: PageLoad, turnId: string): void {
  if (followed.has(turnId)) return;
  followed.add(turnId);
  const turn = client.turn(turnId);
  record({ k: 'attach', tab, session, turnId, baseline: turn.getSnapshot().lastSeq });
  void (async () => {
    for await (const event of turn) record({ k: 'applied', tab, session, turnId, seq: event.seq, event: canonicalJson(event) });
  })().catch((error: unknown) => record({ k: 'error', tab, session, message: `iterator of ${turnId}: ${String(error)}` }));
  turn.completed.then(
    async (snapshot) => {
      record({
        k: 'done',
        tab,
        session,
        turnId,
        status: snapshot.status,
        lastSeq: snapshot.lastSeq,
        textLength: snapshot.text.length,
        sha: await sha256Hex(snapshot.text),
        ...(snapshot.error ? { error: `${snapshot.error.code}: ${snapshot.error.message}` } : {}),
      });
    },
    (error: unknown) => record({ k: 'error', tab, session, message: `completed of ${turnId} rejected: ${String(error)}` }),
  );
}

/** Follows accepted turns, reports recoveries (a reload's jump from storage too) and the diagnostics worth a look. */
function watchDiagnostics(load: PageLoad): void {
  const { tab, session, record, followed } = load;
  load.client.diagnostics.subscribe((diagnostic: Diagnostic) => {
    switch (diagnostic.type) {
      case 'accepted':
        follow(load, diagnostic.turnId);
        break;
      case 'recovered':
        // A reload recovery of a turn already followed is a jump from storage; `events` is its lastSeq then.
        // Recorded synchronously: it follows an IndexedDB read (its own task), so every event applied
        // before it has already come out of the iterators.
        if (diagnostic.path === 'reload' && followed.has(diagnostic.turnId)) {
          record({ k: 'restored', tab, session, turnId: diagnostic.turnId, seq: diagnostic.events });
        }
        record({ k: 'recovered', tab, session, turnId: diagnostic.turnId, path: diagnostic.path, events: diagnostic.events });
        break;
      case 'failed':
      case 'protocol-error':
      case 'integrity-mismatch':
      case 'storage-error':
        record({ k: 'diagnostic', tab, session, type: diagnostic.type, detail: JSON.stringify(diagnostic) });
        break;
      default:
        break;
    }
  });
}

function start(config: DriverConfig): void {
  if (location.origin !== config.origin) return;
  const session = Number(sessionStorage.getItem('soak-session') ?? '0') + 1;
  sessionStorage.setItem('soak-session', String(session));
  const { tab } = config;
  const record = createRecord(tab, session);
  const client: LifelineClient = createLifeline({
    baseUrl: '/api',
    namespace: config.namespace,
    retry: { firstRetryJitterMs: 50, initialDelayMs: 100, maxDelayMs: 1000 },
    stall: { firstEventMs: config.firstEventMs, idleMs: config.idleMs },
    outbox: { timeoutMs: 5000 },
  });
  const load: PageLoad = { client, tab, session, record, followed: new Set() };
  const followKnown = () => {
    for (const snapshot of client.turns.getSnapshot()) follow(load, snapshot.id);
  };
  watchDiagnostics(load);

  window.__soak = {
    send(conversationId, index) {
      const submission = client.conversation(conversationId).send({ soak: index });
      submission.accepted.then(
        (turn) => follow(load, turn.id),
        (error: unknown) => record({ k: 'error', tab, session, message: `submission ${index} failed: ${String(error)}` }),
      );
    },
    follow: (turnId) => follow(load, turnId),
    outboxSize: () => client.outbox.getSnapshot().filter((entry) => entry.state !== 'accepted').length,
    async verify(turnId) {
      const turn = client.turn(turnId);
      // A turn this page load has not followed yet is loaded from storage first.
      await Promise.race([turn.completed, new Promise((resolve) => setTimeout(resolve, 5000))]);
      const snapshot = turn.getSnapshot();
      const stored = await storedText(config.namespace, turnId);
      return {
        status: snapshot.status,
        lastSeq: snapshot.lastSeq,
        pageSha: await sha256Hex(snapshot.text),
        storedSha: stored ? await sha256Hex(stored.text) : null,
        storedStatus: stored?.status ?? null,
      };
    },
  };
  // Restored turns exist once `ready` resolves and their network starts only after it:
  // following them here sees every event they apply.
  void client.ready.then(() => {
    followKnown();
    client.turns.subscribe(followKnown);
    record({ k: 'ready', tab, session });
  });
}

declare const __SOAK_CONFIG__: DriverConfig;
start(__SOAK_CONFIG__);
