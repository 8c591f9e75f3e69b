/**
 * One server under measurement, in its own process so its CPU (`process.cpuUsage`,
 * answered on `GET /cpu`) is its own: `MODE=memory` or `MODE=redis` (with `REDIS_URL`)
 * is the Lifeline reference server under `/api`; `MODE=raw` is the baseline, a plain
 * Node SSE server that produces the same events and writes each one, serialised once,
 * to every follower, answers a full replay from its events in memory (under `/api` too,
 * like Lifeline's) and stops a turn on cancel. Both produce at the same pace: two 16-character deltas every
 * `TICK_MS` (default 10), as many as the submitted content says. Prints `{"port":N}`
 * once it listens. `GET /cpu` answers its CPU so far, `GET /stats` its event-loop delay
 * and, for each full replay (`?after=0&limit=10000`) since the last look, when it was
 * sent, reached the listener and was handed to the socket, and how many fan-out slices ran
 * meanwhile. Used by bench/server-path.ts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { createLifelineHandler } from '../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../src/server/log/memory/index.js';
import { createRedisTurnLog } from '../../src/server/log/redis/index.js';
import { toNodeListener } from '../../src/server/node/index.js';
import type { TurnLog } from '../../src/server/log/turn-log.js';

const env = process.env;
const mode = env['MODE'] ?? 'memory';
const tickMs = Number(env['TICK_MS'] ?? 10);
/** 16 characters, different per delta so nothing can be cached by content. */
const deltaText = (n: number): string => `d${String(n).padStart(14, '0')} `;

/** Two deltas per tick, paced against the start so a busy loop does not stretch the turn. */
async function* paced(count: number): AsyncGenerator<string> {
  const start = performance.now();
  for (let n = 0; n < count; n += 2) {
    const wait = start + (n / 2 + 1) * tickMs - performance.now();
    if (wait > 0) await delay(wait);
    yield deltaText(n);
    if (n + 1 < count) yield deltaText(n + 1);
  }
}

function cpu(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(process.cpuUsage()));
}

function lifeline(): (req: IncomingMessage, res: ServerResponse) => void {
  const log: TurnLog = mode === 'redis' ? createRedisTurnLog({ url: env['REDIS_URL'] ?? '', keyPrefix: `bench${process.pid}:` }) : createMemoryTurnLog();
  const handler = createLifelineHandler({
    store: log,
    basePath: '/api',
    maxLiveTurns: 100_000,
    onError: (error) => console.error('[server-child]', error),
    agent: async function* ({ content }) {
      for await (const text of paced(Number(content))) yield { type: 'delta', text };
    },
  });
  return toNodeListener(handler);
}

interface RawTurn {
  frames: string[];
  /** The events as objects, for the replay route. */
  events: object[];
  ended: boolean;
  followers: Set<ServerResponse>;
}

/**
 * The baseline: what a hand-written SSE endpoint does, nothing more (no log, no resume, no checks): every frame
 * written to every follower as it is produced, a replay answered from the events in memory, a cancel that stops
 * the producer.
 */
function raw(): (req: IncomingMessage, res: ServerResponse) => void {
  const turns = new Map<string, RawTurn>();
  let ids = 0;
  async function produce(turnId: string, turn: RawTurn, count: number): Promise<void> {
    let seq = 0;
    const push = (type: string, body: object): void => {
      seq++;
      const event = { turnId, seq, type, ...body };
      const frame = `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(event)}\n\n`;
      turn.events.push(event);
      turn.frames.push(frame);
      for (const res of turn.followers) res.write(frame);
    };
    push('turn.start', { messageId: 'm', conversationId: 'c', createdAt: new Date().toISOString() });
    let length = 0;
    for await (const text of paced(count)) {
      if (turn.ended) return;
      length += text.length;
      push('delta', { text });
    }
    push('turn.end', { status: 'complete', textLength: length });
    turn.ended = true;
    for (const res of turn.followers) res.end();
  }
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://raw');
    if (req.method === 'POST' && url.pathname === '/turns') {
      const turnId = `raw${++ids}`;
      const turn: RawTurn = { frames: [], events: [], ended: false, followers: new Set() };
      turns.set(turnId, turn);
      void produce(turnId, turn, Number(url.searchParams.get('deltas') ?? 0));
      return void res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ turnId }));
    }
    const [, turnId = '', action] = /^(?:\/api)?\/turns\/([^/]+)(?:\/(events|cancel))?$/.exec(url.pathname) ?? [];
    const turn = turns.get(turnId);
    if (!turn) return void res.writeHead(404).end();
    if (action === 'cancel') {
      turn.ended = true;
      for (const follower of turn.followers) follower.end();
      return void res.writeHead(202, { 'content-type': 'application/json' }).end('{}');
    }
    if (action === undefined) {
      const after = Number(url.searchParams.get('after') ?? 0);
      const events = turn.events.slice(after, after + Number(url.searchParams.get('limit') ?? 100));
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ turn: { lastSeq: turn.events.length }, events }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write(turn.frames.join(''));
    if (turn.ended) return void res.end();
    turn.followers.add(res);
    res.on('close', () => turn.followers.delete(res));
  };
}

const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
/**
 * ms on CLOCK_MONOTONIC (process.hrtime), one clock for every process on the machine, so the bench's and this
 * process's readings compare; each process's performance.timeOrigin is its own estimate (off by up to ~1 ms).
 */
const sharedNow = (): number => Number(process.hrtime.bigint()) / 1e6;

/** One full replay as the server saw it, ms on the shared monotonic clock; `slices` counts setImmediate calls between start and finish. */
interface ReplaySeen {
  sent: number;
  start: number;
  finish: number;
  slices: number;
}

let replays: ReplaySeen[] = [];
const FULL_REPLAY = /^\/api\/turns\/[^/?]+\?after=0&limit=10000$/;

// The fan-out yields with setImmediate between its slices of followers (src/server/http/turn-feed.ts) and looks
// the global up at each call: counting calls here says how many slices (or other immediates) ran while a replay
// was in the server.
let immediates = 0;
const realSetImmediate = globalThis.setImmediate;
globalThis.setImmediate = Object.assign(
  <T extends unknown[]>(callback: (...args: T) => void, ...args: T): NodeJS.Immediate => {
    immediates++;
    return realSetImmediate(callback, ...args);
  },
  { __promisify__: realSetImmediate.__promisify__ },
);

let utilization = performance.eventLoopUtilization();

/** What `GET /stats` answers: the event loop's delay and utilisation, and the full replays seen, since the last look. */
function stats(res: ServerResponse): void {
  const busy = performance.eventLoopUtilization(utilization).utilization;
  const body = { loopP50: loopDelay.percentile(50) / 1e6, loopP99: loopDelay.percentile(99) / 1e6, busy, replays };
  utilization = performance.eventLoopUtilization();
  loopDelay.reset();
  replays = [];
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * A full replay's times here: sent (the bench's `x-bench-sent` header), the listener's call, and its answer's last
 * byte handed to the socket.
 */
function timeReplay(req: IncomingMessage, res: ServerResponse): void {
  const start = sharedNow();
  const before = immediates;
  const sent = Number(req.headers['x-bench-sent'] ?? Number.NaN);
  res.once('finish', () => replays.push({ sent, start, finish: sharedNow(), slices: immediates - before }));
}

const listener = mode === 'raw' ? raw() : lifeline();
const server = createServer((req, res) => {
  if (req.url === '/cpu') return cpu(res);
  if (req.url === '/stats') return stats(res);
  if (FULL_REPLAY.test(req.url ?? '')) timeReplay(req, res);
  listener(req, res);
});
// Exits through process.exit, so a `--cpu-prof` profile is written (bench/lib/server-clients.ts stops it so).
process.once('SIGTERM', () => process.exit(0));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
