/**
 * The seeded chaos soak. Drives the real client (the BUILT package, in Chromium through
 * Playwright) against the reference server through the seeded fault proxy, with the
 * faults of a schedule derived from the seed, then checks the oracles of FAULTS.md for
 * every turn. Shared by `npm run soak` (scripts/soak.mjs) and the small soak in
 * `npm test` (test/browser/soak/soak-small.spec.ts).
 *
 * The server side stays in this process across "restarts": the turn log, the handler
 * and its producers live on; only the HTTP listener and its sockets are closed and a new
 * one is started on the same port, so producers keep logging while nobody can connect.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { startPageServer, type PageServer } from '../../test/browser/fixtures/page-server.js';
import { isStreamRequest, startFaultProxy, type FaultPlan, type FaultProxy, type ProxiedConnection, type RequestInfo } from '../../test/fixtures/fault-proxy.js';
import { createLifelineHandler } from '../../src/server/handler.js';
import { createMemoryTurnLog } from '../../src/server/memory-turn-log.js';
import { toNodeListener } from '../../src/server/node.js';
import type { TurnLog } from '../../src/server/turn-log.js';
import type { TurnEvent } from '../../src/protocol/schemas.js';
import { soakAgent, soakIndexOf } from './agent.js';
import { FaultBook } from './fault-book.js';
import { withInjectedFaults, type InjectorLog } from './injector.js';
import { checkJ0, checkX1, sha256, textOf, type FollowRecord } from './oracles.js';
import type { DriverConfig, SoakMessage } from './page-driver.js';
import { createSchedule, FAULT_KINDS, scheduleHash, type Fault, type FaultKind } from './schedule.js';

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

const HEARTBEAT_MS = 500;
const NAMESPACE = 'soak';

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `task`s one at a time (page navigation vs evaluate, one global fault at a time). */
function createLock(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>) => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

let driverSource: Promise<string> | undefined;
/** The page driver bundled with the BUILT package (`lifeline` resolves to dist/ through the exports map). */
function driverBundle(): Promise<string> {
  driverSource ??= build({
    entryPoints: [fileURLToPath(new URL('./page-driver.ts', import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  }).then((result) => result.outputFiles[0]!.text);
  return driverSource;
}

/** A proxy-level fault planned for a stream request, until its connection shows whether it acted. */
interface Tracked {
  fault: Fault;
  request: RequestInfo;
  connection: ProxiedConnection;
}

function planFor(fault: Fault): FaultPlan {
  switch (fault.kind) {
    case 'reset':
      return { kind: 'cut', afterBytes: fault.atByte ?? 0, how: 'rst' };
    case 'close':
      return { kind: 'cut', afterBytes: fault.atByte ?? 0, how: 'fin' };
    default:
      return { kind: 'stall', afterBytes: fault.atByte ?? 0 };
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const idleMs = options.idleMs ?? 1500;
  const turnTimeoutMs = options.turnTimeoutMs ?? 120_000;
  const schedule = createSchedule({
    seed: options.seed,
    turns: options.turns,
    faults: options.faults,
    ...(options.conversations !== undefined ? { conversations: options.conversations } : {}),
  });
  const hash = scheduleHash(schedule);
  log(`soak: seed ${options.seed}, ${options.turns} turns, ${options.faults} faults, schedule ${hash}`);
  const book = new FaultBook(schedule);
  const problems: string[] = [];
  const problem = (text: string) => {
    if (problems.length < 40) problems.push(text);
  };

  /** Undone in reverse order however the run ends. */
  const teardown: (() => unknown)[] = [];
  try {
    // ---------------------------------------------------------------- server side
    const turnsBySubmission = new Map<number, string[]>();
    const turnsByKey = new Map<string, Set<string>>();
    const globalQueue: Fault[] = [];
    let wakeGlobal: (() => void) | undefined;
    const memoryLog = createMemoryTurnLog();
    teardown.push(() => memoryLog.close());
    const store: TurnLog = new Proxy(memoryLog, {
      get(target, property, receiver) {
        if (property === 'createTurn') {
          return async (turn: Parameters<TurnLog['createTurn']>[0]) => {
            const created = await target.createTurn(turn);
            const index = soakIndexOf(turn.content);
            if (index !== undefined) {
              turnsBySubmission.set(index, [...(turnsBySubmission.get(index) ?? []), created.id]);
              book.bind(index, created.id);
              onTurnCreated(index, created.id);
            }
            return created;
          };
        }
        if (property === 'append') {
          return async (turnId: string, event: Parameters<TurnLog['append']>[1]) => {
            const logged = await target.append(turnId, event);
            const due = book.takeGlobal(turnId, logged.seq);
            if (due.length > 0) {
              globalQueue.push(...due);
              wakeGlobal?.();
            }
            return logged;
          };
        }
        if (property === 'completeIdempotency') {
          return async (...args: Parameters<TurnLog['completeIdempotency']>) => {
            await target.completeIdempotency(...args);
            const [principal, key, record] = args;
            if (record.turnId !== undefined) {
              const turns = turnsByKey.get(`${principal}/${key}`) ?? new Set<string>();
              turns.add(record.turnId);
              turnsByKey.set(`${principal}/${key}`, turns);
            }
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const serverErrors: string[] = [];
    const handler = createLifelineHandler({
      agent: soakAgent({ plan: (index) => schedule.turns[index], pending: (index) => book.pending(index) }),
      store,
      basePath: '/api',
      heartbeatMs: HEARTBEAT_MS,
      onError: (error, context) => serverErrors.push(`${context.phase}${context.turnId ? ` ${context.turnId}` : ''}: ${String(error)}`),
    });
    teardown.push(() => handler.close());
    const stats: InjectorLog = { streams: 0, replays: 0, submits: 0 };
    const rewrites = new Map<string, Fault>();
    const listener = toNodeListener(withInjectedFaults(handler, book, stats, rewrites), {
      onError: (error) => serverErrors.push(`listener: ${String(error)}`),
    });
    let pageServer: PageServer = await startPageServer(listener);
    teardown.push(() => pageServer.close());
    const tracked: Tracked[] = [];
    const proxy: FaultProxy = await startFaultProxy({
      targetPort: pageServer.port,
      plan(request) {
        if (!isStreamRequest(request)) return { kind: 'pass' };
        const turnId = /\/turns\/([^/?]+)\/events/.exec(request.path)?.[1] ?? '';
        const fault = book.takeStream(turnId);
        if (!fault) return { kind: 'pass' };
        if (fault.kind === 'duplicate-seq' || fault.kind === 'gap-seq') {
          const previous = rewrites.get(turnId);
          if (previous) book.giveBack(previous);
          rewrites.set(turnId, fault);
          return { kind: 'pass' };
        }
        // The proxy sets the connection's request before asking for its plan.
        const connection = [...proxy.connections].find((candidate) => candidate.request === request);
        if (!connection) {
          book.giveBack(fault);
          return { kind: 'pass' };
        }
        tracked.push({ fault, request, connection });
        return planFor(fault);
      },
    });

    /** Settles proxy-level faults: fired once the connection passed the planned byte, given back if it ended first. */
    const settleTracked = (): void => {
      for (let i = tracked.length - 1; i >= 0; i--) {
        const { fault, request, connection } = tracked[i]!;
        const acted = connection.stalled || connection.bytesDown >= (fault.atByte ?? 0);
        const over = connection.request !== request || !proxy.connections.has(connection);
        if (!acted && !over) continue;
        tracked.splice(i, 1);
        if (!acted) book.giveBack(fault);
        else if (fault.kind === 'replay-503' || fault.kind === 'replay-429') book.armReplay(fault);
        else book.fired(fault);
      }
    };
    teardown.push(() => proxy.close());
    const settler = setInterval(settleTracked, 20);
    teardown.push(() => clearInterval(settler));

    // ---------------------------------------------------------------- browser side
    const context: BrowserContext = await options.browser.newContext();
    teardown.push(() => context.close());
    const driver = await driverBundle();
    /** Every page's attach / restored / applied records, in arrival order (each page's own order). */
    const follows: FollowRecord[] = [];
    const recoveries: Record<string, number> = { resume: 0, replay: 0, reload: 0 };
    const doneByTurn = new Map<string, { status: string; sha: string; error?: string }>();
    const doneWaiters = new Map<number, () => void>();
    const clientDiagnostics = new Map<string, { count: number; examples: string[] }>();
    const readyWaiters: { tab: string; resolve: () => void }[] = [];
    let unhandled = 0;
    let consoleErrors = 0;
    let networkMessages = 0;

    const onMessage = (message: SoakMessage): void => {
      switch (message.k) {
        case 'applied':
        case 'attach':
        case 'restored':
          follows.push(message);
          break;
        case 'recovered':
          // The client also reports restoring a turn that had nothing stored yet; that recovered nothing.
          if (message.events > 0) recoveries[message.path] = (recoveries[message.path] ?? 0) + 1;
          break;
        case 'done':
          if (message.tab === 'A') {
            doneByTurn.set(message.turnId, { status: message.status, sha: message.sha, ...(message.error ? { error: message.error } : {}) });
            const index = book.indexOf(message.turnId);
            if (index !== undefined) doneWaiters.get(index)?.();
          }
          break;
        case 'ready':
          for (const waiter of readyWaiters.splice(0)) {
            if (waiter.tab === message.tab) waiter.resolve();
            else readyWaiters.push(waiter);
          }
          break;
        case 'error':
          unhandled++;
          problem(`tab ${message.tab}#${message.session}: ${message.message.slice(0, 300)}`);
          break;
        case 'diagnostic':
          // Informative: a failed step is only a problem when its turn does not end complete (checked per turn).
          {
            const seen = clientDiagnostics.get(message.type) ?? { count: 0, examples: [] };
            seen.count++;
            if (seen.examples.length < 2) seen.examples.push(message.detail.slice(0, 400));
            clientDiagnostics.set(message.type, seen);
          }
          break;
        default:
          break;
      }
    };

    const openTab = async (tab: string): Promise<Page> => {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() !== 'error') return;
        const text = message.text();
        // The browser's own log line for each failed request is expected under faults.
        if (/^Failed to load resource|net::ERR_/.test(text)) networkMessages++;
        else {
          consoleErrors++;
          problem(`console error in tab ${tab}: ${text.slice(0, 300)}`);
        }
      });
      page.on('pageerror', (error) => {
        unhandled++;
        problem(`page error in tab ${tab}: ${error.message.slice(0, 300)}`);
      });
      await page.exposeFunction('__soakRecord', (message: SoakMessage) => onMessage(message));
      const config: DriverConfig = { tab, namespace: NAMESPACE, origin: proxy.origin, idleMs, firstEventMs: idleMs };
      await page.addInitScript({ content: `var __SOAK_CONFIG__ = ${JSON.stringify(config)};\n${driver}` });
      const ready = new Promise<void>((resolve) => readyWaiters.push({ tab, resolve }));
      await page.goto(`${proxy.origin}/`);
      await ready;
      return page;
    };

    const pageLock = createLock();
    const pageA = await openTab('A');
    /** The second tab while open; each one gets its own name (B1, B2, …) so their page loads stay apart. */
    let tabB: Page | undefined;
    let secondTabs = 0;

    /** Asks tab A to follow a turn (after a reload, or one another tab accepted). */
    function followInA(turnId: string): void {
      void pageLock(() => pageA.evaluate((id) => window.__soak?.follow(id), turnId)).catch(() => undefined);
    }
    function onTurnCreated(_index: number, turnId: string): void {
      followInA(turnId);
    }

    // ---------------------------------------------------------------- global faults
    let globalsDone = false;
    teardown.push(() => {
      globalsDone = true;
      wakeGlobal?.();
    });
    const globalWorker = (async () => {
      while (!globalsDone) {
        const fault = globalQueue.shift();
        if (!fault) {
          await new Promise<void>((resolve) => {
            wakeGlobal = resolve;
            setTimeout(resolve, 200);
          });
          continue;
        }
        try {
          await runGlobal(fault);
        } catch (error) {
          problem(`global fault ${fault.kind} #${fault.id}: ${String(error)}`);
        }
      }
    })();

    async function runGlobal(fault: Fault): Promise<void> {
      switch (fault.kind) {
        case 'server-restart': {
          book.fired(fault);
          const port = pageServer.port;
          await pageServer.close();
          await pause(fault.durationMs ?? 500);
          pageServer = await startPageServer(listener, { port });
          return;
        }
        case 'reload':
          book.fired(fault);
          await pageLock(async () => {
            const ready = new Promise<void>((resolve) => readyWaiters.push({ tab: 'A', resolve }));
            await pageA.reload();
            await ready;
          });
          for (const [index, turns] of turnsBySubmission) {
            const turnId = turns[0];
            if (turnId !== undefined && !doneByTurn.has(turnId) && schedule.turns[index]) followInA(turnId);
          }
          return;
        case 'offline':
          book.fired(fault);
          await context.setOffline(true);
          proxy.resetWhere(isStreamRequest);
          await pause(fault.durationMs ?? 500);
          await context.setOffline(false);
          return;
        case 'second-tab': {
          if (tabB) return;
          book.fired(fault);
          secondTabs++;
          tabB = await openTab(`B${secondTabs}`);
          await pause(fault.durationMs ?? 1000);
          await tabB.close();
          tabB = undefined;
          return;
        }
        default:
          return;
      }
    }

    // ---------------------------------------------------------------- turns
    const stuck: number[] = [];
    const submitted: number[] = [];
    let finished = 0;
    /** Resolves true once tab A saw the turn of soak submission `index` end, false after the timeout. */
    const waitTurn = (index: number): Promise<boolean> =>
      new Promise((resolve) => {
        const turnId = turnsBySubmission.get(index)?.[0];
        if (turnId !== undefined && doneByTurn.has(turnId)) return resolve(true);
        const deadline = setTimeout(() => {
          doneWaiters.delete(index);
          resolve(false);
        }, turnTimeoutMs);
        // A run that failed part way must not be held open by its turns' deadlines.
        deadline.unref();
        doneWaiters.set(index, () => {
          clearTimeout(deadline);
          doneWaiters.delete(index);
          resolve(true);
        });
      });

    const conversationRuns = Array.from({ length: schedule.conversations }, async (_, conversation) => {
      for (const plan of schedule.turns.filter((turn) => turn.conversation === conversation)) {
        submitted.push(plan.index);
        await pageLock(() => pageA.evaluate(([c, i]) => window.__soak!.send(c, i), [`soak-c${conversation}`, plan.index] as const));
        const ok = await waitTurn(plan.index);
        const turnId = turnsBySubmission.get(plan.index)?.[0];
        if (!ok) {
          stuck.push(plan.index);
          problem(`turn ${plan.index} (${turnId ?? 'never created'}) did not end in tab A within ${turnTimeoutMs} ms`);
        }
        book.close(plan.index);
        finished++;
        if (finished % 10 === 0) log(`  … ${finished}/${schedule.turns.length} turns done, ${((Date.now() - started) / 1000).toFixed(0)} s`);
      }
    });
    await Promise.all(conversationRuns);
    globalsDone = true;
    wakeGlobal?.();
    await globalWorker;

    // ---------------------------------------------------------------- oracles
    const totals: SoakTotals = {
      turns: schedule.turns.length,
      completed: 0,
      failedTurns: 0,
      stuck: stuck.length,
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

    // X1: the outbox drains (entries are removed once accepted).
    const outboxDeadline = Date.now() + 30_000;
    for (;;) {
      totals.outboxLeft = await pageLock(() => pageA.evaluate(() => window.__soak!.outboxSize()));
      if (totals.outboxLeft === 0 || Date.now() > outboxDeadline) break;
      await pause(100);
    }
    if (totals.outboxLeft > 0) problem(`${totals.outboxLeft} outbox entries left in tab A`);
    const x1 = checkX1(turnsBySubmission, turnsByKey, submitted);
    totals.doubleEffect = x1.doubleEffect;
    totals.missingTurns = x1.missing;
    for (const note of x1.notes) problem(`X1: ${note}`);

    for (const [index, turns] of [...turnsBySubmission].sort(([a], [b]) => a - b)) {
      const turnId = turns[0]!;
      const events: TurnEvent[] = [];
      for (let after = 0; ; ) {
        const page = await memoryLog.read(turnId, after, 10_000);
        events.push(...page.events);
        if (!page.hasMore || page.events.length === 0) break;
        after = page.events.at(-1)!.seq;
      }
      const end = events.at(-1);
      const serverSha = sha256(textOf(events));
      if (end?.type !== 'turn.end' || end.textSha256 !== serverSha) problem(`turn ${index}: the server log does not end with a matching turn.end`);
      const done = doneByTurn.get(turnId);
      if (done?.status === 'complete') totals.completed++;
      else if (done) {
        totals.failedTurns++;
        problem(`turn ${index} (${turnId}) ended ${done.status} in tab A${done.error ? `: ${done.error}` : ''}`);
      }
      // T=: what tab A shows and what its IndexedDB holds, once folded.
      let verdict = await pageLock(() => pageA.evaluate((id) => window.__soak!.verify(id), turnId));
      const deadline = Date.now() + 5000;
      while (verdict.storedSha !== serverSha && Date.now() < deadline) {
        await pause(100);
        verdict = await pageLock(() => pageA.evaluate((id) => window.__soak!.verify(id), turnId));
      }
      if (verdict.pageSha !== serverSha) {
        totals.textMismatches++;
        problem(`T=: turn ${index} page text differs from the server's (${verdict.status}, lastSeq ${verdict.lastSeq}/${end?.seq ?? 0})`);
      }
      if (verdict.storedSha !== serverSha) {
        totals.storageMismatches++;
        problem(`T=: turn ${index} IndexedDB text differs from the server's (stored status ${verdict.storedStatus ?? 'none'})`);
      }
      // J0 over every tab and page load that followed it.
      const j0 = checkJ0(
        events,
        follows.filter((record) => record.turnId === turnId),
        'A',
      );
      totals.lost += j0.lost;
      totals.duplicated += j0.duplicated;
      totals.outOfOrder += j0.outOfOrder;
      totals.unexpected += j0.unexpected;
      for (const note of j0.notes) problem(`J0 turn ${index}: ${note}`);
    }
    const known = new Set([...turnsBySubmission.values()].flat());
    for (const record of follows) {
      if (record.k === 'applied' && !known.has(record.turnId)) {
        totals.unexpected++;
        problem(`J0: applied an event of unknown turn ${record.turnId}`);
      }
    }
    totals.unhandled = unhandled;
    totals.consoleErrors = consoleErrors;
    totals.serverErrors = serverErrors.length;
    for (const error of serverErrors.slice(0, 5)) problem(`server: ${error.slice(0, 300)}`);


    const passed =
      totals.completed === totals.turns &&
      totals.stuck === 0 &&
      totals.failedTurns === 0 &&
      totals.lost + totals.duplicated + totals.outOfOrder + totals.unexpected === 0 &&
      totals.textMismatches + totals.storageMismatches === 0 &&
      totals.doubleEffect + totals.missingTurns + totals.outboxLeft === 0 &&
      totals.unhandled + totals.consoleErrors + totals.serverErrors === 0;
    const faults = book.counts();
    const durationMs = Date.now() - started;
    const report = soakReport({ options, hash, faults, recoveries, totals, passed, durationMs, networkMessages, stats, clientDiagnostics, problems });
    return { passed, hash, faults, recoveries, totals, problems, durationMs, report };
  } finally {
    for (const step of teardown.reverse()) await Promise.resolve().then(step).catch(() => undefined);
  }
}

function soakReport(r: {
  options: SoakOptions;
  hash: string;
  faults: Map<FaultKind, { scheduled: number; fired: number }>;
  recoveries: Record<string, number>;
  totals: SoakTotals;
  passed: boolean;
  durationMs: number;
  networkMessages: number;
  stats: InjectorLog;
  clientDiagnostics: Map<string, { count: number; examples: string[] }>;
  problems: string[];
}): string {
  const t = r.totals;
  let scheduled = 0;
  let fired = 0;
  const rows = FAULT_KINDS.map((kind) => {
    const count = r.faults.get(kind) ?? { scheduled: 0, fired: 0 };
    scheduled += count.scheduled;
    fired += count.fired;
    return `| ${kind} | ${count.scheduled} | ${count.fired} |`;
  });
  const lines = [
    `seed ${r.options.seed} · turns ${r.options.turns} · faults ${r.options.faults} · schedule ${r.hash} · ${(r.durationMs / 1000).toFixed(0)} s`,
    '',
    '| fault | scheduled | injected |',
    '|---|---:|---:|',
    ...rows,
    `| **total** | **${scheduled}** | **${fired}** |`,
    '',
    '| check | count |',
    '|---|---:|',
    `| turns completed / submitted | ${t.completed} / ${t.turns} |`,
    `| turns failed / stuck | ${t.failedTurns} / ${t.stuck} |`,
    `| recoveries: resume / replay / reload | ${r.recoveries['resume'] ?? 0} / ${r.recoveries['replay'] ?? 0} / ${r.recoveries['reload'] ?? 0} |`,
    `| J0 lost / duplicated / out of order / unexpected | ${t.lost} / ${t.duplicated} / ${t.outOfOrder} / ${t.unexpected} |`,
    `| T= page text ≠ server / IndexedDB text ≠ server | ${t.textMismatches} / ${t.storageMismatches} |`,
    `| X1 double effect / submission without turn / outbox left | ${t.doubleEffect} / ${t.missingTurns} / ${t.outboxLeft} |`,
    `| unhandled errors / console errors / server errors | ${t.unhandled} / ${t.consoleErrors} / ${t.serverErrors} |`,
    `| requests: submits / streams / replays (browser network lines ignored: ${r.networkMessages}) | ${r.stats.submits} / ${r.stats.streams} / ${r.stats.replays} |`,
  ];
  if (r.clientDiagnostics.size > 0) {
    lines.push('', 'Client diagnostics seen (informative; a turn that ends complete recovered from them):');
    for (const [type, seen] of r.clientDiagnostics) lines.push(`- ${type} × ${seen.count}, e.g. ${seen.examples.join(' · ')}`);
  }
  if (r.problems.length > 0) lines.push('', 'Problems:', ...r.problems.map((p) => `- ${p}`));
  lines.push('', r.passed ? 'SOAK PASS' : 'SOAK FAIL');
  return lines.join('\n');
}
