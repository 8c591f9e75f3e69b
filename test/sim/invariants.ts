/**
 * The invariants checked after every step (issue 23, item 5), each answering the violations
 * it finds. They read the world synchronously: the server's log is the oracle, the disk's
 * mirror and the journal say what is durable, the scheduler and network say what waits.
 */
import type { SimWorld, SimTab } from './world.js';

/** What broke, named by a stable kind (the defect class it points at) and a line for the trace. */
export interface Violation {
  kind:
    | 'lost-message'
    | 'accepted-twice'
    | 'text'
    | 'seq-order'
    | 'status'
    | 'waits-on-nothing'
    | 'unsettled-after-dispose'
    | 'unsettled-at-end'
    | 'turn-not-ended'
    | 'message-not-accepted'
    | 'busy-loop'
    | 'uncaught'
    | 'corrupt-report';
  detail: string;
}

/** Far above what healthy turns need (a flush timer per few events, a heartbeat a second), far below a spin. */
export const MAX_TIMERS_PER_SECOND = 600;
/** A few tabs each reconnecting, replaying and submitting: tens a second at most, with backoff. */
export const MAX_REQUESTS_PER_SECOND = 60;

const ENDED = new Set(['complete', 'failed', 'cancelled']);
const KNOWN = new Set(['turn.start', 'delta', 'action', 'part', 'turn.end']);

/** Every invariant that must hold after any step. */
export function checkStep(world: SimWorld): Violation[] {
  const found: Violation[] = [];
  const { server, disk, scheduler, network } = world;

  // A message not accepted is durable: on the disk or in the journal. One the journal refused
  // (localStorage full) is durable once its storage write landed (3 ms), unless storage failed too.
  for (const [operationId, message] of world.messages) {
    if (message.discarded || server.keys.has(operationId)) continue;
    if (!message.journaled && (disk.troubled || scheduler.now() - message.sentAt < 10)) continue;
    const journaled = disk.localStorage.getItem(`lifeline-outbox:sim:${operationId}`) !== null;
    if (!journaled && !disk.durableOutbox.has(operationId)) found.push({ kind: 'lost-message', detail: `${message.content} (${operationId}) is neither stored nor journaled, and the server never accepted it` });
  }
  // Never accepted twice: one turn per message.
  const turnsPerContent = new Map<unknown, number>();
  for (const turn of server.turns.values()) turnsPerContent.set(turn.content, (turnsPerContent.get(turn.content) ?? 0) + 1);
  for (const [content, count] of turnsPerContent) if (count > 1) found.push({ kind: 'accepted-twice', detail: `${String(content)} made ${count} turns` });

  for (const tab of world.tabs) if (tab.alive) found.push(...checkTab(world, tab));

  if (scheduler.peakTimersPerSecond > MAX_TIMERS_PER_SECOND) found.push({ kind: 'busy-loop', detail: `${scheduler.peakTimersPerSecond} timers fired in one virtual second` });
  for (const error of scheduler.uncaught.splice(0)) found.push({ kind: 'uncaught', detail: `thrown from a timer or task: ${describe(error)}` });
  for (const error of world.unhandled.splice(0)) found.push({ kind: 'uncaught', detail: `unhandled rejection: ${describe(error)}` });
  const corrupt = world.tabs.reduce((n, tab) => n + tab.corruptReports, 0);
  if (corrupt > disk.corrupted) found.push({ kind: 'corrupt-report', detail: `${corrupt} storage_corrupt_record reported, ${disk.corrupted} injected` });
  if (network.peakRequestsPerSecond > MAX_REQUESTS_PER_SECOND) found.push({ kind: 'busy-loop', detail: `${network.peakRequestsPerSecond} requests in one virtual second` });
  return found;
}

function checkTab(world: SimWorld, tab: SimTab): Violation[] {
  const found: Violation[] = [];
  const { server, scheduler, network, platform } = world;
  let waiting = false;
  for (const snapshot of tab.client.turns.getSnapshot()) {
    const turn = server.turns.get(snapshot.id);
    if (!turn) continue;
    const expected = turn.log.slice(0, snapshot.lastSeq).filter((e) => e.type === 'delta').map((e) => e['text']).join('');
    if (snapshot.lastSeq > turn.log.length) found.push({ kind: 'seq-order', detail: `${tab.id} ${snapshot.id}: lastSeq ${snapshot.lastSeq} past the log's ${turn.log.length}` });
    else if (snapshot.text !== expected) found.push({ kind: 'text', detail: `${tab.id} ${snapshot.id}: text ${JSON.stringify(snapshot.text)} is not the deltas up to seq ${snapshot.lastSeq}: ${JSON.stringify(expected)}` });
    const end = turn.log.at(-1);
    if (ENDED.has(snapshot.status) && !snapshot.error) {
      if (end?.type !== 'turn.end' || end['status'] !== snapshot.status) found.push({ kind: 'status', detail: `${tab.id} ${snapshot.id}: ${snapshot.status} but the server says ${end?.type === 'turn.end' ? String(end['status']) : 'live'}` });
    }
    if (!ENDED.has(snapshot.status) && snapshot.connection.state !== 'closed' && snapshot.connection.state !== 'idle') waiting = true;
  }
  // Each seq applied once, in order: an iterator may skip only events of a type it does not know.
  for (const [turnId, handle] of tab.handles) {
    const log = server.turns.get(turnId)?.log ?? [];
    for (let i = 1; i < handle.seqs.length; i++) {
      const [before, after] = [handle.seqs[i - 1]!, handle.seqs[i]!];
      const skipped = log.slice(before, after - 1);
      if (after <= before || skipped.some((e) => KNOWN.has(e.type))) {
        found.push({ kind: 'seq-order', detail: `${tab.id} ${turnId}: iterator gave seq ${after} after ${before}` });
        break;
      }
    }
  }
  // A live turn waits on a timer, a request or an external wake (the network coming back).
  if (waiting && platform.online() && scheduler.pending(tab.id) === 0 && network.inflight(tab.id) === 0) {
    found.push({ kind: 'waits-on-nothing', detail: `${tab.id}: a turn is live with no timer, request or task of its tab pending` });
  }
  return found;
}

/** After `dispose()` (and the microtasks it released): every promise the tab's API returned has settled. */
export function checkDisposed(tab: SimTab): Violation[] {
  return tab.promises.filter((p) => !p.settled).map((p) => ({ kind: 'unsettled-after-dispose' as const, detail: `${tab.id}: ${p.label} still pending after dispose()` }));
}

/** After the heal phase: everything the faults held up has finished within the retry budget. */
export function checkEnd(world: SimWorld): Violation[] {
  const found: Violation[] = [];
  for (const tab of world.tabs) {
    if (!tab.alive) continue;
    for (const p of tab.promises) if (!p.settled && !p.waitsOnApp?.()) found.push({ kind: 'unsettled-at-end', detail: `${tab.id}: ${p.label} still pending at the end of the retry budget` });
    for (const [turnId, handle] of tab.handles) {
      if (handle.closed) continue;
      const snapshot = tab.client.turns.getSnapshot().find((s) => s.id === turnId);
      if (snapshot && !ENDED.has(snapshot.status)) found.push({ kind: 'turn-not-ended', detail: `${tab.id} ${turnId}: still ${snapshot.status} (${snapshot.connection.state}) after the server ended it` });
    }
  }
  for (const [operationId, message] of world.messages) {
    if (message.discarded || world.server.keys.has(operationId)) continue;
    // Refused by the journal and by storage: lost with its tab, unavoidably (the client said `degraded`).
    if (!message.journaled && world.disk.troubled) continue;
    const failed = world.tabs.some((tab) => tab.alive && tab.client.outbox.getSnapshot().some((e) => e.operationId === operationId && e.state === 'failed'));
    if (!failed) found.push({ kind: 'message-not-accepted', detail: `${message.content} (${operationId}) never accepted nor failed visibly` });
  }
  return found;
}

/** An error's name, message and the first frame in src/ (where the client let it escape). */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const frame = error.stack?.split('\n').find((line) => line.includes('/src/'))?.trim().replace(/^at /, '').replace(/\(?\/.*?\/src\//, '(src/');
  return `${error.name}: ${error.message}${frame ? ` at ${frame}` : ''}`;
}

/** Whether everything is done: the heal phase may stop early. */
export function quiet(world: SimWorld): boolean {
  for (const tab of world.tabs) {
    if (!tab.alive) continue;
    if (tab.promises.some((p) => !p.settled && !p.waitsOnApp?.())) return false;
    if (tab.client.turns.getSnapshot().some((s) => !ENDED.has(s.status) && s.connection.state !== 'closed' && s.connection.state !== 'idle')) return false;
  }
  return [...world.messages].every(([id, m]) => m.discarded || world.server.keys.has(id) || (!m.journaled && world.disk.troubled)) && [...world.server.turns.values()].every(world.server.isEnded);
}
