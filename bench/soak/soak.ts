/**
 * The seeded chaos soak. Drives the real client (the BUILT package, in Chromium through
 * Playwright) against the reference server through the seeded fault proxy, with the
 * faults of a schedule derived from the seed, then checks the oracles of docs/faults.md for
 * every turn. Shared by `npm run soak` (scripts/soak.mjs) and the small soak in
 * `npm test` (test/browser/soak/soak-small.spec.ts).
 *
 * Its parts: soak-server.ts (handler, recording turn log, injector, fault proxy),
 * soak-browser.ts (the tabs and what they report), global-faults.ts, verdict.ts (the
 * oracles) and report.ts (the table).
 */
import type { Browser } from '@playwright/test';
import { FaultBook } from './fault-book.js';
import { createGlobalFaults } from './global-faults.js';
import { soakReport } from './report.js';
import { createSchedule, scheduleHash, type FaultKind, type Schedule } from './schedule.js';
import { openSoakBrowser, type SoakBrowser } from './soak-browser.js';
import { startSoakServer, type SoakServer } from './soak-server.js';
import { judge, passes, type SoakTotals } from './verdict.js';

export type { SoakTotals } from './verdict.js';

export interface SoakOptions {
  seed: number;
  turns: number;
  faults: number;
  /** Conversations run side by side (turns of one conversation run in order). Default 4. */
  conversations?: number;
  /** A Playwright browser; the soak opens its own context in it. */
  browser: Browser;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Stall watchdogs of the client under test, ms. Default 1500. */
  idleMs?: number;
  /** A turn not complete this long after it was submitted counts as stuck. Default 120 000. */
  turnTimeoutMs?: number;
}

export interface SoakResult {
  passed: boolean;
  hash: string;
  faults: Map<FaultKind, { scheduled: number; fired: number }>;
  recoveries: Record<string, number>;
  totals: SoakTotals;
  /** Reasons behind every failing count (first few of each). */
  problems: string[];
  durationMs: number;
  /** The printable table, ending with the verdict line. */
  report: string;
}

/**
 * Sends every turn of the schedule, each conversation's in order, and waits (up to the
 * turn timeout) for tab A to see each end; answers the submissions that got stuck.
 */
async function runTurns(schedule: Schedule, book: FaultBook, server: SoakServer, browser: SoakBrowser, options: SoakOptions, submitted: number[], problem: (text: string) => void): Promise<number[]> {
  const turnTimeoutMs = options.turnTimeoutMs ?? 120_000;
  const started = Date.now();
  const stuck: number[] = [];
  let finished = 0;
  const conversationRuns = Array.from({ length: schedule.conversations }, async (_, conversation) => {
    for (const plan of schedule.turns.filter((turn) => turn.conversation === conversation)) {
      submitted.push(plan.index);
      await browser.pageLock(() => browser.pageA.evaluate(([c, i]) => window.__soak!.send(c, i), [`soak-c${conversation}`, plan.index] as const));
      const ok = await browser.waitTurn(plan.index, server.turnsBySubmission.get(plan.index)?.[0], turnTimeoutMs);
      const turnId = server.turnsBySubmission.get(plan.index)?.[0];
      if (!ok) {
        stuck.push(plan.index);
        problem(`turn ${plan.index} (${turnId ?? 'never created'}) did not end in tab A within ${turnTimeoutMs} ms`);
      }
      book.close(plan.index);
      finished++;
      if (finished % 10 === 0) options.log?.(`  … ${finished}/${schedule.turns.length} turns done, ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
  });
  await Promise.all(conversationRuns);
  return stuck;
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const started = Date.now();
  const schedule = createSchedule({
    seed: options.seed,
    turns: options.turns,
    faults: options.faults,
    ...(options.conversations !== undefined ? { conversations: options.conversations } : {}),
  });
  const hash = scheduleHash(schedule);
  options.log?.(`soak: seed ${options.seed}, ${options.turns} turns, ${options.faults} faults, schedule ${hash}`);
  const book = new FaultBook(schedule);
  const problems: string[] = [];
  const problem = (text: string): void => {
    if (problems.length < 40) problems.push(text);
  };
  /** Undone in reverse order however the run ends. */
  const teardown: (() => unknown)[] = [];
  try {
    const globals = createGlobalFaults(schedule, book, problem);
    let browser: SoakBrowser | undefined;
    const server = await startSoakServer({ schedule, book, teardown, onGlobalFaults: globals.push, onTurnCreated: (_, turnId) => browser?.followInA(turnId) });
    browser = await openSoakBrowser({ browser: options.browser, origin: server.proxy.origin, idleMs: options.idleMs ?? 1500, book, problem, teardown });
    // Stopped, not awaited, however the run ends: a fault in progress may never finish.
    teardown.push(() => void globals.stop());
    globals.start(server, browser);
    const submitted: number[] = [];
    const stuck = await runTurns(schedule, book, server, browser, options, submitted, problem);
    await globals.stop();
    const totals = await judge({ server, browser, turns: schedule.turns.length, submitted, stuck: stuck.length, problem });
    const passed = passes(totals);
    const { recoveries, networkMessages, clientDiagnostics } = browser.reports;
    const faults = book.counts();
    const durationMs = Date.now() - started;
    const report = soakReport({ options, hash, faults, recoveries, totals, passed, durationMs, networkMessages, stats: server.stats, clientDiagnostics, problems });
    return { passed, hash, faults, recoveries, totals, problems, durationMs, report };
  } finally {
    for (const step of teardown.reverse()) await Promise.resolve().then(step).catch(() => undefined);
  }
}
