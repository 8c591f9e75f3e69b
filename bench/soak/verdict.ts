/**
 * The soak's verdict: once every turn ran, the oracles of docs/faults.md over what the server
 * logged and what the tabs reported. X1 (each submission made exactly one turn, the
 * outbox drained), T= (tab A's text and its IndexedDB text equal the server's) and J0
 * (each event applied once, in order, in every tab and page load).
 */
import type { TurnEvent } from '../../src/protocol/schemas.js';
import { checkJ0, checkX1, sha256, textOf } from './oracles.js';
import type { SoakBrowser } from './soak-browser.js';
import type { SoakServer } from './soak-server.js';

export interface SoakTotals {
  turns: number;
  completed: number;
  failedTurns: number;
  stuck: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  unexpected: number;
  textMismatches: number;
  storageMismatches: number;
  doubleEffect: number;
  missingTurns: number;
  outboxLeft: number;
  unhandled: number;
  consoleErrors: number;
  serverErrors: number;
}

export interface RunFacts {
  server: SoakServer;
  browser: SoakBrowser;
  turns: number;
  /** Soak submissions sent, by index. */
  submitted: number[];
  /** Submissions whose turn did not end in tab A in time. */
  stuck: number;
  problem: (text: string) => void;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Counts every oracle's failures (each with a few problems said). */
export async function judge(facts: RunFacts): Promise<SoakTotals> {
  const { server, browser, problem } = facts;
  const { reports } = browser;
  const totals: SoakTotals = {
    turns: facts.turns,
    completed: 0,
    failedTurns: 0,
    stuck: facts.stuck,
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    unexpected: 0,
    textMismatches: 0,
    storageMismatches: 0,
    doubleEffect: 0,
    missingTurns: 0,
    outboxLeft: 0,
    unhandled: 0,
    consoleErrors: 0,
    serverErrors: 0,
  };
  await checkOutbox(facts, totals);
  for (const [index, turns] of [...server.turnsBySubmission].sort(([a], [b]) => a - b)) await checkTurn(facts, totals, index, turns[0]!);
  const known = new Set([...server.turnsBySubmission.values()].flat());
  for (const record of reports.follows) {
    if (record.k === 'applied' && !known.has(record.turnId)) {
      totals.unexpected++;
      problem(`J0: applied an event of unknown turn ${record.turnId}`);
    }
  }
  // Read last: errors while checking count too.
  totals.unhandled = reports.unhandled;
  totals.consoleErrors = reports.consoleErrors;
  totals.serverErrors = server.serverErrors.length;
  for (const error of server.serverErrors.slice(0, 5)) problem(`server: ${error.slice(0, 300)}`);
  return totals;
}

/** Whether every count that must be zero is, and every turn completed. */
export function passes(t: SoakTotals): boolean {
  return (
    t.completed === t.turns &&
    t.stuck === 0 &&
    t.failedTurns === 0 &&
    t.lost + t.duplicated + t.outOfOrder + t.unexpected === 0 &&
    t.textMismatches + t.storageMismatches === 0 &&
    t.doubleEffect + t.missingTurns + t.outboxLeft === 0 &&
    t.unhandled + t.consoleErrors + t.serverErrors === 0
  );
}

/** X1: the outbox drains (entries are removed once accepted) and each submission made one turn. */
async function checkOutbox({ server, browser, submitted, problem }: RunFacts, totals: SoakTotals): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    totals.outboxLeft = await browser.pageLock(() => browser.pageA.evaluate(() => window.__soak!.outboxSize()));
    if (totals.outboxLeft === 0 || Date.now() > deadline) break;
    await pause(100);
  }
  if (totals.outboxLeft > 0) problem(`${totals.outboxLeft} outbox entries left in tab A`);
  const x1 = checkX1(server.turnsBySubmission, server.turnsByKey, submitted);
  totals.doubleEffect = x1.doubleEffect;
  totals.missingTurns = x1.missing;
  for (const note of x1.notes) problem(`X1: ${note}`);
}

/** One turn: how it ended in tab A, T= against the server's log, J0 over every page that followed it. */
async function checkTurn({ server, browser, problem }: RunFacts, totals: SoakTotals, index: number, turnId: string): Promise<void> {
  const events: TurnEvent[] = [];
  for (let after = 0; ; ) {
    const page = await server.turnLog.read(turnId, after, 10_000);
    events.push(...page.events);
    if (!page.hasMore || page.events.length === 0) break;
    after = page.events.at(-1)!.seq;
  }
  const end = events.at(-1);
  const serverSha = sha256(textOf(events));
  if (end?.type !== 'turn.end' || end.textSha256 !== serverSha) problem(`turn ${index}: the server log does not end with a matching turn.end`);
  const done = browser.reports.doneByTurn.get(turnId);
  if (done?.status === 'complete') totals.completed++;
  else if (done) {
    totals.failedTurns++;
    problem(`turn ${index} (${turnId}) ended ${done.status} in tab A${done.error ? `: ${done.error}` : ''}`);
  }
  // T=: what tab A shows and what its IndexedDB holds, once folded.
  const verify = () => browser.pageLock(() => browser.pageA.evaluate((id) => window.__soak!.verify(id), turnId));
  let verdict = await verify();
  const deadline = Date.now() + 5000;
  while (verdict.storedSha !== serverSha && Date.now() < deadline) {
    await pause(100);
    verdict = await verify();
  }
  if (verdict.pageSha !== serverSha) {
    totals.textMismatches++;
    problem(`T=: turn ${index} page text differs from the server's (${verdict.status}, lastSeq ${verdict.lastSeq}/${end?.seq ?? 0})`);
  }
  if (verdict.storedSha !== serverSha) {
    totals.storageMismatches++;
    problem(`T=: turn ${index} IndexedDB text differs from the server's (stored status ${verdict.storedStatus ?? 'none'})`);
  }
  const j0 = checkJ0(events, browser.reports.follows.filter((record) => record.turnId === turnId), 'A');
  totals.lost += j0.lost;
  totals.duplicated += j0.duplicated;
  totals.outOfOrder += j0.outOfOrder;
  totals.unexpected += j0.unexpected;
  for (const note of j0.notes) problem(`J0 turn ${index}: ${note}`);
}
