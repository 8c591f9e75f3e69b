/**
 * The soak's browser side: one Chromium context whose tabs run the page driver (with the
 * BUILT package), and what they report: every attach, restore and applied event (for
 * J0), each turn's end in tab A, recoveries, diagnostics, and every error.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import type { FaultBook } from './fault-book.js';
import type { FollowRecord } from './oracles.js';
import type { DriverConfig, SoakMessage } from './page-driver.js';

const NAMESPACE = 'soak';

let driverSource: Promise<string> | undefined;
/** The page driver bundled with the BUILT package (`lifeline-chat` resolves to dist/ through the exports map). */
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

/** Runs `task`s one at a time (page navigation vs evaluate, one global fault at a time). */
function createLock(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>) => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** What the tabs reported. */
export interface TabReports {
  /** Every page's attach / restored / applied records, in arrival order (each page's own order). */
  follows: FollowRecord[];
  recoveries: Record<string, number>;
  /** How each turn ended in tab A. */
  doneByTurn: Map<string, { status: string; sha: string; error?: string }>;
  clientDiagnostics: Map<string, { count: number; examples: string[] }>;
  unhandled: number;
  consoleErrors: number;
  /** The browser's own log lines for failed requests (expected under faults). */
  networkMessages: number;
}

export interface SoakBrowserOptions {
  browser: Browser;
  /** The fault proxy's origin. */
  origin: string;
  /** Stall watchdogs of the client under test, ms. */
  idleMs: number;
  book: FaultBook;
  problem: (text: string) => void;
  teardown: (() => unknown)[];
}

export interface SoakBrowser {
  readonly context: BrowserContext;
  /** The tab every turn is sent from and checked in. */
  readonly pageA: Page;
  readonly reports: TabReports;
  /** Serialises page work (navigation vs evaluate). */
  readonly pageLock: <T>(task: () => Promise<T>) => Promise<T>;
  openTab(tab: string): Promise<Page>;
  /** Reloads tab A and waits until its driver is ready again. */
  reloadA(): Promise<void>;
  /** Asks tab A to follow a turn (after a reload, or one another tab accepted). */
  followInA(turnId: string): void;
  /** Resolves true once tab A saw the turn of soak submission `index` (`turnId`, when made yet) end, false after `timeoutMs`. */
  waitTurn(index: number, turnId: string | undefined, timeoutMs: number): Promise<boolean>;
}

export async function openSoakBrowser(options: SoakBrowserOptions): Promise<SoakBrowser> {
  const { book, problem } = options;
  const context = await options.browser.newContext();
  options.teardown.push(() => context.close());
  const driver = await driverBundle();
  const reports: TabReports = { follows: [], recoveries: { resume: 0, replay: 0, reload: 0 }, doneByTurn: new Map(), clientDiagnostics: new Map(), unhandled: 0, consoleErrors: 0, networkMessages: 0 };
  const doneWaiters = new Map<number, () => void>();
  const readyWaiters: { tab: string; resolve: () => void }[] = [];
  const onMessage = (message: SoakMessage): void => {
    record(reports, message, problem);
    if (message.k === 'ready') {
      for (const waiter of readyWaiters.splice(0)) {
        if (waiter.tab === message.tab) waiter.resolve();
        else readyWaiters.push(waiter);
      }
    } else if (message.k === 'done' && message.tab === 'A') {
      const index = book.indexOf(message.turnId);
      if (index !== undefined) doneWaiters.get(index)?.();
    }
  };
  const ready = (tab: string): Promise<void> => new Promise((resolve) => readyWaiters.push({ tab, resolve }));

  const openTab = async (tab: string): Promise<Page> => {
    const page = await context.newPage();
    watchPage(page, tab, reports, problem);
    await page.exposeFunction('__soakRecord', (message: SoakMessage) => onMessage(message));
    const config: DriverConfig = { tab, namespace: NAMESPACE, origin: options.origin, idleMs: options.idleMs, firstEventMs: options.idleMs };
    await page.addInitScript({ content: `var __SOAK_CONFIG__ = ${JSON.stringify(config)};\n${driver}` });
    const loaded = ready(tab);
    await page.goto(`${options.origin}/`);
    await loaded;
    return page;
  };

  const pageLock = createLock();
  const pageA = await openTab('A');
  return {
    context,
    pageA,
    reports,
    pageLock,
    openTab,
    reloadA: () =>
      pageLock(async () => {
        const loaded = ready('A');
        await pageA.reload();
        await loaded;
      }),
    followInA(turnId) {
      void pageLock(() => pageA.evaluate((id) => window.__soak?.follow(id), turnId)).catch(() => undefined);
    },
    waitTurn: (index, turnId, timeoutMs) =>
      new Promise((resolve) => {
        if (turnId !== undefined && reports.doneByTurn.has(turnId)) return resolve(true);
        const deadline = setTimeout(() => {
          doneWaiters.delete(index);
          resolve(false);
        }, timeoutMs);
        // A run that failed part way must not be held open by its turns' deadlines.
        deadline.unref();
        doneWaiters.set(index, () => {
          clearTimeout(deadline);
          doneWaiters.delete(index);
          resolve(true);
        });
      }),
  };
}

/** Counts a page's console errors (the browser's failed-request lines apart) and uncaught errors. */
function watchPage(page: Page, tab: string, reports: TabReports, problem: (text: string) => void): void {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    // The browser's own log line for each failed request is expected under faults.
    if (/^Failed to load resource|net::ERR_/.test(text)) reports.networkMessages++;
    else {
      reports.consoleErrors++;
      problem(`console error in tab ${tab}: ${text.slice(0, 300)}`);
    }
  });
  page.on('pageerror', (error) => {
    reports.unhandled++;
    problem(`page error in tab ${tab}: ${error.message.slice(0, 300)}`);
  });
}

/** Files one message of a tab's driver into the reports. */
function record(reports: TabReports, message: SoakMessage, problem: (text: string) => void): void {
  switch (message.k) {
    case 'applied':
    case 'attach':
    case 'restored':
      reports.follows.push(message);
      break;
    case 'recovered':
      // The client also reports restoring a turn that had nothing stored yet; that recovered nothing.
      if (message.events > 0) reports.recoveries[message.path] = (reports.recoveries[message.path] ?? 0) + 1;
      break;
    case 'done':
      if (message.tab === 'A') reports.doneByTurn.set(message.turnId, { status: message.status, sha: message.sha, ...(message.error ? { error: message.error } : {}) });
      break;
    case 'error':
      reports.unhandled++;
      problem(`tab ${message.tab}#${message.session}: ${message.message.slice(0, 300)}`);
      break;
    case 'diagnostic': {
      // Informative: a failed step is only a problem when its turn does not end complete (checked per turn).
      const seen = reports.clientDiagnostics.get(message.type) ?? { count: 0, examples: [] };
      seen.count++;
      if (seen.examples.length < 2) seen.examples.push(message.detail.slice(0, 400));
      reports.clientDiagnostics.set(message.type, seen);
      break;
    }
    default:
      break;
  }
}
