/**
 * The benchmark's HTTP server on 127.0.0.1: serves each measuring page (a tiny HTML
 * shell, an inline probe that must run before anything else, and an esbuild bundle of
 * `bench/pages/<name>.ts` built from the BUILT package), the page's config, the routes
 * of the current run, and `POST /result`, where the page reports its figures.
 */
import { readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { openInChromium } from './chromium.js';

export type Routes = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

const pagesDir = fileURLToPath(new URL('../pages/', import.meta.url));

/**
 * Runs in the page before the bundle: counts IndexedDB transactions (by wrapping
 * `IDBDatabase.prototype.transaction`), records long tasks and uncaught errors. Kept as
 * plain ES5-ish source because it is inlined into the HTML, not bundled.
 */
const PROBE = `
window.__bench = { txStarts: [], txPending: 0, txByMode: {}, longTasks: [], errors: [] };
(function () {
  var b = window.__bench;
  var original = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function () {
    var tx = original.apply(this, arguments);
    b.txByMode[tx.mode] = (b.txByMode[tx.mode] || 0) + 1;
    if (tx.mode === 'readwrite') b.txStarts.push(performance.now());
    b.txPending++;
    var settled = false;
    var end = function () { if (!settled) { settled = true; b.txPending--; b.lastTxEnd = performance.now(); } };
    tx.addEventListener('complete', end);
    tx.addEventListener('abort', end);
    return tx;
  };
  try {
    new PerformanceObserver(function (list) {
      list.getEntries().forEach(function (e) { b.longTasks.push({ start: e.startTime, duration: e.duration }); });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { b.errors.push('longtask observer: ' + e); }
  addEventListener('error', function (e) { b.errors.push('error: ' + e.message); });
  addEventListener('unhandledrejection', function (e) { b.errors.push('unhandled rejection: ' + (e.reason && e.reason.stack || e.reason)); });
})();
`;

const bundles = new Map<string, Promise<string>>();

/** esbuild bundle of one page entry; `lifeline-chat` resolves through the package's exports to dist/. */
function pageBundle(name: string): Promise<string> {
  let bundle = bundles.get(name);
  if (!bundle) {
    bundle = build({
      entryPoints: [`${pagesDir}${name}.ts`],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      write: false,
      logLevel: 'silent',
    }).then(
      (result) => result.outputFiles[0]!.text,
      (error: unknown) => {
        // esbuild's message lists the errors after a header line; keep the first one.
        const first = (error as { errors?: { text: string; location?: { file: string } | null }[] }).errors?.[0];
        throw new Error(first ? `bundle: ${first.text}${first.location ? ` (${first.location.file})` : ''}` : String(error));
      },
    );
    bundles.set(name, bundle);
  }
  return bundle;
}

export interface PageRunOptions {
  /** Extra Chromium switches. */
  flags?: readonly string[];
  /** Give up after this long. Default 120 s. */
  timeoutMs?: number;
  /** Origin the browser opens instead of the bench server's own (e.g. a fault proxy in front of it). */
  origin?: string;
  /** Called once the page has loaded its config (the run is under way). */
  onStarted?: () => void;
}

export interface BenchServer {
  readonly origin: string;
  readonly port: number;
  readonly server: Server;
  /**
   * Opens `/page/<name>` in a fresh Chromium with `config` as its `/config` and `routes`
   * serving everything else, waits for the page's `POST /result`, kills the browser.
   * Rejects on timeout or when the page reports `{ error }`.
   */
  runPage<R>(name: string, config: unknown, routes: Routes, options?: PageRunOptions): Promise<R>;
  close(): Promise<void>;
}

/**
 * Starts the server and bundles every page at once, so the whole run measures the
 * dist/ that was there at its start (other work may rebuild dist/ meanwhile).
 */
export async function startBenchServer(): Promise<BenchServer> {
  const pages = readdirSync(pagesDir).filter((file) => file.endsWith('.ts') && !['probe.ts', 'throughput-types.ts'].includes(file));
  await Promise.all(pages.map((file) => pageBundle(file.slice(0, -'.ts'.length)).catch(() => undefined)));
  let current:
    | { config: unknown; routes: Routes; resolve: (value: unknown) => void; reject: (error: Error) => void; onStarted?: () => void }
    | undefined;

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const run = current;
    if (path.startsWith('/page/')) {
      const name = path.slice('/page/'.length);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(
        `<!doctype html><html><head><meta charset="utf-8"><title>bench ${name}</title>` +
          `<script>${PROBE}</script><script type="module" src="/bundle/${name}.js"></script></head><body></body></html>`,
      );
      return;
    }
    if (path.startsWith('/bundle/') && path.endsWith('.js')) {
      pageBundle(path.slice('/bundle/'.length, -'.js'.length)).then(
        (js) => {
          res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
          res.end(js);
        },
        (error: unknown) => {
          res.writeHead(500).end();
          run?.reject(new Error(`bundle ${path}: ${String(error)}`));
        },
      );
      return;
    }
    if (path === '/favicon.ico') return void res.writeHead(204).end();
    if (!run) return void res.writeHead(503).end();
    if (path === '/config') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(run.config));
      run.onStarted?.();
      return;
    }
    if (path === '/result' && req.method === 'POST') {
      const parts: Buffer[] = [];
      req.on('data', (part: Buffer) => parts.push(part));
      req.on('end', () => {
        res.writeHead(204).end();
        try {
          const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { error?: string };
          if (body.error !== undefined) run.reject(new Error(body.error));
          else run.resolve(body);
        } catch (error) {
          run.reject(new Error(`unreadable result: ${String(error)}`));
        }
      });
      return;
    }
    if (run.routes(req, res, path)) return;
    res.writeHead(404).end();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    port,
    server,
    async runPage<R>(name: string, config: unknown, routes: Routes, options: PageRunOptions = {}): Promise<R> {
      await pageBundle(name);
      const result = new Promise<unknown>((resolve, reject) => {
        current = { config, routes, resolve, reject, ...(options.onStarted ? { onStarted: options.onStarted } : {}) };
      });
      const browser = openInChromium(`${options.origin ?? origin}/page/${name}`, options.flags);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${options.timeoutMs ?? 120_000} ms`)), options.timeoutMs ?? 120_000);
      });
      const exited = new Promise<never>((_, reject) => {
        browser.process.once('exit', (code, signal) => reject(new Error(`chromium exited early (${code ?? signal})`)));
      });
      try {
        return (await Promise.race([result, timeout, exited])) as R;
      } finally {
        clearTimeout(timer);
        current = undefined;
        await browser.close();
        server.closeAllConnections();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
