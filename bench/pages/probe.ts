/**
 * Page-side helpers shared by every measuring page: the config, the probes the inline
 * script installed (IndexedDB transactions, long tasks, errors), an event-loop lag
 * probe, and the report back to the bench server.
 */
interface BenchProbe {
  txStarts: number[];
  txPending: number;
  txByMode: Record<string, number>;
  lastTxEnd?: number;
  longTasks: { start: number; duration: number }[];
  errors: string[];
}

declare global {
  interface Window {
    __bench: BenchProbe;
  }
}

export const probe = (): BenchProbe => window.__bench;

export async function getConfig<C>(): Promise<C> {
  const response = await fetch('/config');
  return (await response.json()) as C;
}

/** Posts the figures (or `{ error }`) to the bench server, which then kills the browser. */
export async function report(result: object): Promise<void> {
  await fetch('/result', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) });
}

/** Runs `main` and reports its result, or its failure as `{ error }`. */
export function runPage(main: () => Promise<object>): void {
  main().then(
    (result) => report(result),
    (error: unknown) => report({ error: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error) }),
  );
}

/**
 * Runs a contender that reads the whole stream: `read` answers how many events it saw.
 * Every contender is timed here, from the call to the end of `read`, with the same lag
 * and window probes, so their figures compare.
 */
export function runTimedRead<C>(read: (config: C) => Promise<number>): void {
  runPage(async () => {
    const config = await getConfig<C>();
    const stopLag = startLagProbe();
    const t0 = performance.now();
    const events = await read(config);
    const t1 = performance.now();
    return { events, ms: t1 - t0, lag: stopLag(), ...windowStats(t0, t1) };
  });
}

export interface LagStats {
  samples: number;
  maxMs: number;
  p99Ms: number;
  meanMs: number;
}

/**
 * Event-loop lag: a 10 ms timer chain; each firing's lateness is one sample. Returns a
 * stop function that yields the statistics.
 */
export function startLagProbe(): () => LagStats {
  const samples: number[] = [];
  let expected = performance.now() + 10;
  let timer = setTimeout(function tick() {
    const now = performance.now();
    samples.push(Math.max(0, now - expected));
    expected = now + 10;
    timer = setTimeout(tick, 10);
  }, 10);
  return () => {
    clearTimeout(timer);
    const sorted = [...samples].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return {
      samples: sorted.length,
      maxMs: sorted[sorted.length - 1] ?? 0,
      p99Ms: at(0.99),
      meanMs: sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length),
    };
  };
}

export interface WindowStats {
  longTasks: number;
  longTaskMaxMs: number;
  longTaskTotalMs: number;
  readwriteTx: number;
}

/** Long tasks and read-write transactions that started inside [t0, t1]. */
export function windowStats(t0: number, t1: number): WindowStats {
  const b = probe();
  const tasks = b.longTasks.filter((task) => task.start + task.duration >= t0 && task.start <= t1);
  return {
    longTasks: tasks.length,
    longTaskMaxMs: tasks.reduce((max, task) => Math.max(max, task.duration), 0),
    longTaskTotalMs: tasks.reduce((sum, task) => sum + task.duration, 0),
    readwriteTx: b.txStarts.filter((start) => start >= t0 && start <= t1).length,
  };
}

/** Resolves once no IndexedDB transaction is open (all writes durable), or after `timeoutMs`. */
export async function idbSettled(timeoutMs = 10_000): Promise<number> {
  const start = performance.now();
  while (probe().txPending > 0 && performance.now() - start < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return probe().lastTxEnd ?? performance.now();
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
