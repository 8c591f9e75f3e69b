/**
 * The example app's server: the built pages (`/`, the Lifeline hooks page, `/ai`, the AI SDK
 * `useChat` page, and `/support`, the operator's view), the Lifeline reference server under
 * `/api`, and the fault lab under `/__lab`, all on one origin.
 *
 *   HOST (default 127.0.0.1)  PORT (default 5173)  AGENT_TOKENS_PER_SECOND (default 40)
 *   AI_MODEL_DELAY_MS (default 40: the mock model's delay between stream parts on `/ai`)
 *   REDIS_URL (optional: log turns in Redis instead of memory)
 *   REDIS_CLUSTER (optional, instead of REDIS_URL: a Redis Cluster's nodes, `host:port,host:port,…`)
 *   OPERATOR_TOKEN (optional: turns the operator API and the `/support` page on; operators send
 *     `Authorization: Bearer <token>`)  STUCK_AFTER_MS, UNDELIVERED_AFTER_MS (default 60000 each)
 *   PRINCIPAL_HEADER (development only: the named request header is the principal, `?user=` on the pages)
 *   DRAIN_MS (default 10 000: on SIGTERM or SIGINT, how long live turns may finish; a second signal stops at once)
 *
 * Run with `npm start` (which builds first), or `tsx examples/chat/server.ts` once built.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createLifelineHandler, createMemoryTurnLog, type TurnLog } from 'lifeline-chat/server';
import { DEFAULT_DRAIN_MS, toNodeListener } from 'lifeline-chat/server/node';
import { createRedisTurnLog } from 'lifeline-chat/server/redis';
import { tokensPerSecondFromEnv } from './agent.js';
import { createExampleAgent, modelDelayFromEnv } from './ai-agent.js';
import { createFaultLab, type FaultLab } from './fault-lab.js';
import { exampleConfig, supportHandlerOptions, supportSettingsFromEnv, type SupportSettings } from './support-env.js';

/** Where `vite build` puts the app. */
export const DIST_DIR = fileURLToPath(new URL('./dist/', import.meta.url));

export interface ExampleServerOptions {
  /** Default `HOST` or 127.0.0.1. */
  host?: string;
  /** Default `PORT` or 5173; 0 picks a free port. */
  port?: number;
  /** Default `AGENT_TOKENS_PER_SECOND` or 40. */
  tokensPerSecond?: number;
  /** The `/ai` page's mock model: delay before and between its stream parts, ms. Default `AI_MODEL_DELAY_MS` or 40. */
  modelDelayMs?: number;
  /** The `/ai` page's mock model: words of its answer text. Default 60. */
  modelWords?: number;
  /** Default `REDIS_URL`; without it (or `redisCluster`) turns are logged in memory. */
  redisUrl?: string;
  /** Default `REDIS_CLUSTER`: a Redis Cluster's nodes as `host:port,host:port,…`. */
  redisCluster?: string;
  /** The built app. Default {@link DIST_DIR}. */
  distDir?: string;
  /** How long "restart the server" refuses connections, ms. Default 3000. */
  restartDownMs?: number;
  /** The operator API, its windows and the principal header. Default: from the environment (support-env.ts). */
  support?: SupportSettings;
}

export interface ExampleServer {
  /** e.g. `http://127.0.0.1:5173` (no trailing slash). */
  url: string;
  port: number;
  lab: FaultLab & {
    /** Stops listening and drops every connection (the page's too). */
    down(): Promise<void>;
    /** Listens again on the same port. */
    up(): Promise<void>;
  };
  /** Where turns are logged: `memory`, `redis` or `redis cluster`. */
  storeKind: string;
  /** How many times the `/ai` page's `transfer` tool ran on the server (once per approved call). */
  transfers(): number;
  /**
   * Stops the server. With `drainMs` it drains first, still listening: submissions answer
   * `503 shutting_down` (the page's outbox sends them again later), live turns may run to
   * their end for up to `drainMs` while their followers keep streaming, the rest end
   * `server_shutdown`. Then it stops listening and closes the turn log.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/** Reads `DRAIN_MS`, falling back to lifeline's `DEFAULT_DRAIN_MS` for anything that is not a number ≥ 0. */
export function drainMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['DRAIN_MS'] ?? Number.NaN);
  return Number.isFinite(value) && value >= 0 ? value : DEFAULT_DRAIN_MS;
}

/**
 * Opens the turn log. REDIS HOOK: with `REDIS_URL` set this is where the Redis Streams
 * turn log plugs in, so turns survive a real process restart and are shared by instances.
 */
async function openTurnLog(redisUrl: string | undefined, redisCluster: string | undefined): Promise<{ log: TurnLog; kind: string }> {
  if (redisUrl && redisCluster) throw new Error('Set REDIS_URL or REDIS_CLUSTER, not both.');
  if (redisCluster) return { log: createRedisTurnLog({ url: `redis-cluster://${redisCluster}` }), kind: 'redis cluster' };
  if (redisUrl) return { log: createRedisTurnLog({ url: redisUrl }), kind: 'redis' };
  return { log: createMemoryTurnLog(), kind: 'memory' };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Pages with an html entry of their own (vite.config.ts). */
const ENTRIES: Record<string, string> = { '/ai': '/ai.html', '/support': '/support.html' };

function serveStatic(distDir: string, path: string, res: ServerResponse): void {
  const root = resolve(distDir);
  let file = resolve(join(root, normalize(decodeURIComponent(path))));
  if (file !== root && !file.startsWith(root + sep)) return void res.writeHead(404).end();
  // Client-side routes (and `/`) get the app shell.
  if (!existsSync(file) || !statSync(file).isFile()) file = join(root, 'index.html');
  if (!existsSync(file)) {
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
    return void res.end('The example app is not built yet: run `npm start` (or `npx vite build examples/chat`).\n');
  }
  const hashed = file.includes(`${sep}assets${sep}`);
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-store',
  });
  createReadStream(file).pipe(res);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** Starts the example server; resolves once it listens. */
export async function startExampleServer(options: ExampleServerOptions = {}): Promise<ExampleServer> {
  const host = options.host ?? process.env['HOST'] ?? '127.0.0.1';
  const distDir = options.distDir ?? DIST_DIR;
  const restartDownMs = options.restartDownMs ?? 3000;
  const { log, kind } = await openTurnLog(options.redisUrl ?? process.env['REDIS_URL'], options.redisCluster ?? process.env['REDIS_CLUSTER']);
  let transfers = 0;
  const agent = createExampleAgent({
    onTransfer: () => void transfers++,
    tokensPerSecond: options.tokensPerSecond ?? tokensPerSecondFromEnv(),
    modelDelayMs: options.modelDelayMs ?? modelDelayFromEnv(),
    modelWords: options.modelWords ?? 60,
    log,
  });
  const support = options.support ?? supportSettingsFromEnv();
  const handler = createLifelineHandler({
    ...supportHandlerOptions(support),
    agent,
    store: log,
    basePath: '/api',
    // One line per failure: the fake agent fails on purpose (`/fail`), a stack trace would only shout.
    onError: (error, { phase, turnId }) =>
      console.warn(`[example] ${phase} error${turnId ? ` in turn ${turnId}` : ''}: ${error instanceof Error ? error.message : String(error)}`),
  });
  const lab = createFaultLab();
  const api = toNodeListener(lab.wrap(handler));

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/api' || path.startsWith('/api/')) {
      lab.track(req, res);
      return api(req, res);
    }
    if (path.startsWith('/__lab/')) return labRoute(path, req, res);
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    if (path === '/__example/config') return sendJson(res, 200, exampleConfig(support));
    // The AI SDK and support pages are entries of their own; every other route gets the hooks page.
    serveStatic(distDir, ENTRIES[path.replace(/\/$/, '')] ?? path, res);
  });

  function labRoute(path: string, req: IncomingMessage, res: ServerResponse): void {
    const query = new URL(req.url ?? '/', 'http://lab').searchParams;
    if (path === '/__lab/state' && req.method === 'GET') return sendJson(res, 200, lab.state());
    if (req.method !== 'POST') return sendJson(res, 405, { error: { code: 'method_not_allowed', message: 'Use POST.' } });
    switch (path) {
      case '/__lab/cut':
        return sendJson(res, 200, { cut: lab.cut(), ...lab.state() });
      case '/__lab/stall':
        return sendJson(res, 200, { stalled: lab.stall(), ...lab.state() });
      case '/__lab/fail-submissions': {
        const count = Number(query.get('count') ?? '1');
        lab.failSubmissions(Number.isFinite(count) ? Math.min(count, 100) : 1);
        return sendJson(res, 200, lab.state());
      }
      case '/__lab/restart': {
        const ms = Math.min(Math.max(Number(query.get('ms') ?? restartDownMs) || restartDownMs, 500), 30_000);
        // Answer first: the restart drops this very connection.
        res.once('finish', () => void restart(ms));
        return sendJson(res, 202, { downForMs: ms });
      }
      default:
        return sendJson(res, 404, { error: { code: 'not_found', message: 'Unknown lab action.' } });
    }
  }

  let port = options.port ?? Number(process.env['PORT'] ?? 5173);
  let listening = false;
  function up(): Promise<void> {
    if (listening) return Promise.resolve();
    return new Promise((resolvePromise, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        listening = true;
        port = (server.address() as AddressInfo).port;
        resolvePromise();
      });
    });
  }
  function down(): Promise<void> {
    if (!listening) return Promise.resolve();
    listening = false;
    return new Promise((resolvePromise) => {
      server.close(() => resolvePromise());
      server.closeAllConnections();
    });
  }
  let restarting: Promise<void> | undefined;
  function restart(ms: number): Promise<void> {
    restarting ??= down()
      .then(() => new Promise((r) => setTimeout(r, ms)))
      .then(up)
      .finally(() => (restarting = undefined));
    return restarting;
  }

  await up();
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    port,
    storeKind: kind,
    transfers: () => transfers,
    lab: Object.assign(lab, { down, up }),
    async close(closeOptions = {}) {
      await restarting?.catch(() => {});
      if (closeOptions.drainMs !== undefined) await handler.close({ drainMs: closeOptions.drainMs });
      await down();
      await handler.close();
      await log.close();
    },
  };
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (isMain) {
  const server = await startExampleServer();
  console.log(`Lifeline example chat: ${server.url}/  (turn log: ${server.storeKind})`);
  const drainMs = drainMsFromEnv();
  let stopping = false;
  // A deploy's SIGTERM (or Ctrl-C) lets live answers finish instead of failing them; a second one does not wait.
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log(`[example] ${signal}: draining live turns for up to ${drainMs} ms`);
    void server.close({ drainMs }).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('[example] shutdown failed:', error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
