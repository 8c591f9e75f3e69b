/**
 * Storage benchmark, in headless Chromium with no DevTools session (bench/lib/chromium):
 *
 * - hydration of a 10 000-event turn on a cold page (a fresh document opening the
 *   database, as after a reload): folded into one record, and as unfolded chunks;
 * - appending 100 000 events, through the client's persistence layer (events arrive a
 *   network read's worth per task and are flushed every 16 ms or 256 events) and
 *   straight through the store in chunks of 256: read-write transactions per second,
 *   events per second until durable, and main-thread long tasks.
 *
 * One browser and profile for the whole run; every step is its own page load. Needs
 * dist/ (`npm run build`). Run alone: `npx tsx bench/storage.bench.ts [--runs N]`.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { openInChromium } from './lib/chromium.js';
import { fixed, int, median } from './lib/stats.js';
import type { AppendFigures, HydrateFigures, StepConfig } from './storage.bench.page.js';

const root = fileURLToPath(new URL('..', import.meta.url));

const HYDRATE_EVENTS = 10_000;
const APPEND_EVENTS = 100_000;
const CHUNK_EVENTS = 256;
/** About one 64 KiB network read of small SSE delta events. */
const EVENTS_PER_TASK = 700;
/** The paced run: a fast but plausible stream, in reads of 500 events every 10 ms. */
const PACE_EVENTS_PER_SECOND = 50_000;
const PACED_EVENTS_PER_TASK = 500;

type AppendPath = 'persistence' | 'persistence-paced' | 'store';
const APPEND_PATHS: readonly AppendPath[] = ['persistence', 'persistence-paced', 'store'];

export interface StorageBenchResult {
  runs: number;
  hydration: { turn: 'folded' | 'chunked'; runs: HydrateFigures[] }[];
  append: { path: AppendPath; runs: AppendFigures[] }[];
}

/** Bundles the page from the build: every `…/src/…` import is taken from `…/dist/…`. */
async function pageBundle(): Promise<string> {
  const fromDist: Plugin = {
    name: 'src-to-dist',
    setup(builder) {
      builder.onResolve({ filter: /\/src\/.+\.js$/ }, (args) => ({
        path: resolve(args.resolveDir, args.path).replace(`${root}src/`, `${root}dist/`),
      }));
    },
  };
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./storage.bench.page.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
    plugins: [fromDist],
  });
  return result.outputFiles[0]!.text;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolveBody, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolveBody(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** Runs `steps` as consecutive page loads in one headless Chromium; resolves with each step's figures. */
async function runSteps(steps: readonly StepConfig[], log: (line: string) => void, timeoutMs: number): Promise<unknown[]> {
  const js = await pageBundle();
  const results: unknown[] = [];
  let finish: (error?: Error) => void = () => undefined;
  const finished = new Promise<void>((resolveRun, reject) => {
    finish = (error) => (error ? reject(error) : resolveRun());
  });
  const server = createServer((req, res) => {
    const [path = '/', query = ''] = (req.url ?? '/').split('?');
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(`<!doctype html><meta charset="utf-8"><title>storage bench ${query}</title><script type="module" src="/page.js"></script>`);
      return;
    }
    if (path === '/page.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
      res.end(js);
      return;
    }
    const step = /^\/(step|result)\/(\d+)$/.exec(path);
    if (step?.[1] === 'step') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(steps[Number(step[2])]));
      return;
    }
    if (step?.[1] === 'result' && req.method === 'POST') {
      const index = Number(step[2]);
      void readBody(req).then((body) => {
        const figures = JSON.parse(body) as { error?: string };
        if (figures.error !== undefined) {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          finish(new Error(`step ${index} (${steps[index]?.kind}): ${figures.error}`));
          return;
        }
        results[index] = figures;
        log(`  storage step ${index + 1}/${steps.length} ${describe(steps[index]!)} done`);
        const last = index === steps.length - 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(last ? {} : { next: `/?step=${index + 1}` }));
        if (last) finish();
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = openInChromium(`${origin}/?step=0`);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      finished,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`storage bench timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
      new Promise<never>((_, reject) => {
        browser.process.once('exit', (code, signal) => reject(new Error(`chromium exited early (${code ?? signal})`)));
      }),
    ]);
    return results;
  } finally {
    clearTimeout(timer);
    await browser.close();
    server.closeAllConnections();
    await new Promise<void>((closed) => server.close(() => closed()));
  }
}

function appendStep(path: AppendPath): StepConfig {
  const base = { kind: 'append', namespace: `bench-append-${path}`, events: APPEND_EVENTS, chunkEvents: CHUNK_EVENTS } as const;
  if (path === 'store') return { ...base, path: 'store', eventsPerTask: CHUNK_EVENTS };
  if (path === 'persistence') return { ...base, path: 'persistence', eventsPerTask: EVENTS_PER_TASK };
  return { ...base, path: 'persistence', eventsPerTask: PACED_EVENTS_PER_TASK, paceEventsPerSecond: PACE_EVENTS_PER_SECOND };
}

function describe(step: StepConfig): string {
  if (step.kind === 'setup') return 'setup';
  if (step.kind === 'hydrate') return `hydrate ${step.turnId}`;
  return `append via ${step.path}${step.paceEventsPerSecond === undefined ? '' : ' (paced)'}`;
}

/** Measures: `runs` cold hydrations per layout and `runs` append runs per path, interleaved. */
export async function benchStorage(options: { runs?: number; log?: (line: string) => void } = {}): Promise<StorageBenchResult> {
  const runs = options.runs ?? 5;
  const log = options.log ?? (() => undefined);
  const steps: StepConfig[] = [{ kind: 'setup', namespace: 'bench-hydrate', events: HYDRATE_EVENTS, chunkEvents: CHUNK_EVENTS }];
  for (let run = 0; run < runs; run++) {
    for (const turnId of ['folded', 'chunked'] as const) steps.push({ kind: 'hydrate', namespace: 'bench-hydrate', turnId, events: HYDRATE_EVENTS });
  }
  for (let run = 0; run < runs; run++) {
    for (const path of APPEND_PATHS) steps.push(appendStep(path));
  }
  const results = await runSteps(steps, log, 300_000);
  const pick = <T>(predicate: (step: StepConfig) => boolean) => steps.flatMap((step, i) => (predicate(step) ? [results[i] as T] : []));
  return {
    runs,
    hydration: (['folded', 'chunked'] as const).map((turn) => ({
      turn,
      runs: pick<HydrateFigures>((step) => step.kind === 'hydrate' && step.turnId === turn),
    })),
    append: APPEND_PATHS.map((path) => ({
      path,
      runs: pick<AppendFigures>((step) => step.kind === 'append' && step.namespace === `bench-append-${path}`),
    })),
  };
}

/** The figures as two markdown tables (medians over the runs; max over the runs where it says so). */
export function storageReport(result: StorageBenchResult): string {
  const med = <T>(runs: readonly T[], key: (run: T) => number) => median(runs.map(key));
  const hydration = [
    `Hydration of a ${int(HYDRATE_EVENTS)}-event turn on a cold page (fresh document, first connection); median of ${result.runs} runs, ms.`,
    '',
    '| stored as | open | loadTurn | text | total | max total |',
    '|---|---:|---:|---:|---:|---:|',
    ...result.hydration.map(({ turn, runs }) => {
      const label = turn === 'folded' ? 'folded: one record (ended turn)' : `chunks of ${CHUNK_EVENTS} events (unfinished turn)`;
      return `| ${label} | ${fixed(med(runs, (r) => r.openMs))} | ${fixed(med(runs, (r) => r.loadMs))} | ${fixed(med(runs, (r) => r.textMs))} | ${fixed(med(runs, (r) => r.totalMs))} | ${fixed(Math.max(...runs.map((r) => r.totalMs)))} |`;
    }),
  ];
  const append = [
    `Appending ${int(APPEND_EVENTS)} events until durable (flush every 16 ms or ${CHUNK_EVENTS} events); median of ${result.runs} runs (longest long task: max over the runs).`,
    '',
    '| path | events/s | read-write tx | tx/s | long tasks | longest, ms | long tasks total, ms | problems |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...result.append.map(({ path, runs }) => {
      const label = {
        persistence: `persistence layer, producer unthrottled (${EVENTS_PER_TASK} events per task)`,
        'persistence-paced': `persistence layer, producer at ${int(PACE_EVENTS_PER_SECOND)} events/s`,
        store: `store.write, ${CHUNK_EVENTS} events each, awaited in turn`,
      }[path];
      const problems = [...new Set(runs.flatMap((r) => r.problems))];
      return `| ${label} | ${int(med(runs, (r) => (r.events / r.ms) * 1000))} | ${int(med(runs, (r) => r.readwriteTx))} | ${int(med(runs, (r) => (r.readwriteTx / r.ms) * 1000))} | ${int(med(runs, (r) => r.longTasks))} | ${fixed(Math.max(...runs.map((r) => r.longTaskMaxMs)))} | ${fixed(med(runs, (r) => r.longTaskTotalMs))} | ${problems.length ? problems.join('; ') : 'none'} |`;
    }),
  ];
  return [...hydration, '', ...append].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
  const result = await benchStorage({ runs: Number(values.runs), log: (line) => console.log(line) });
  console.log(`\n${storageReport(result)}`);
}
