/**
 * The client side of bench/server-path.ts: a server child started and stopped, its CPU
 * read, followers that count the events they receive, and the raw Redis loop that the
 * Lifeline Redis log is compared with.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { Redis } from 'ioredis';
import { lastSeqIn } from './last-seq.js';

/**
 * One full replay as the server child saw it, ms on CLOCK_MONOTONIC (`process.hrtime`, comparable across
 * processes): `sent` is the bench's `x-bench-sent` header, `start` the listener's call, `finish` the answer's last
 * byte handed to the socket; `slices` the fan-out slices (setImmediate calls) that ran from start to finish.
 */
export interface ReplaySeen {
  sent: number;
  start: number;
  finish: number;
  slices: number;
}

/** What the server child saw since the last look (see bench/lib/server-child.ts). */
export interface ChildStats {
  /** Event-loop delay quantiles, ms (monitorEventLoopDelay, 1 ms resolution). */
  loopP50: number;
  loopP99: number;
  /** Event-loop utilisation (`performance.eventLoopUtilization`), 0 to 1. */
  busy: number;
  /** Each full replay since the last look, in order. */
  replays: ReplaySeen[];
}

export interface ServerChild {
  origin: string;
  /** User + system CPU of the server process so far, µs. */
  cpu(): Promise<number>;
  /** What the server saw since the last call (the first call: since it started). */
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
}

/**
 * Starts bench/lib/server-child.ts in `mode`; resolves once it listens. With
 * `BENCH_CPU_PROF=<dir>` in the environment the child runs with `--cpu-prof` and writes
 * its profile there when stopped.
 */
export async function startServerChild(mode: 'memory' | 'redis' | 'raw', redisUrl = ''): Promise<ServerChild> {
  const script = fileURLToPath(new URL('./server-child.ts', import.meta.url));
  const profile = process.env['BENCH_CPU_PROF'];
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    env: { ...process.env, MODE: mode, REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ${mode} server exited (${code}) before listening`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    async cpu() {
      const usage = (await (await fetch(`${origin}/cpu`)).json()) as { user: number; system: number };
      return usage.user + usage.system;
    },
    async stats() {
      return (await (await fetch(`${origin}/stats`)).json()) as ChildStats;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // The child exits on SIGTERM at once, writing its CPU profile if it takes one.
      child.kill('SIGTERM');
      await exited;
    },
  };
}

let submitted = 0;

/** Submits a turn of `deltas` deltas to `server`; the URL its followers open and its full replay's. */
export async function startTurn(server: ServerChild, mode: 'memory' | 'redis' | 'raw', deltas: number): Promise<{ follow: string; replay: string }> {
  const n = submitted++;
  if (mode === 'raw') {
    const { turnId } = (await (await fetch(`${server.origin}/turns?deltas=${deltas}`, { method: 'POST' })).json()) as { turnId: string };
    return { follow: `${server.origin}/turns/${turnId}/events`, replay: `${server.origin}/api/turns/${turnId}?after=0&limit=10000` };
  }
  const response = await fetch(`${server.origin}/api/conversations/bench-${n % 7}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `bench-path-${process.pid}-${Date.now()}-${n}` },
    body: JSON.stringify({ content: String(deltas) }),
  });
  if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
  const { turnId } = (await response.json()) as { turnId: string };
  return { follow: `${server.origin}/api/turns/${turnId}/events`, replay: `${server.origin}/api/turns/${turnId}?after=0&limit=10000` };
}

/** GET `url` as an event stream over its own socket; resolves with the response once headers came. */
function openSse(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' }, agent: false }, resolve);
    req.once('error', reject);
    req.end();
  });
}

/** Follows `url` to the end of its body; resolves with the events (messages with an id) and the last one's type. */
export async function followToEnd(url: string): Promise<{ events: number; last: string | undefined }> {
  const res = await openSse(url);
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  let events = 0;
  let last: string | undefined;
  const parser = createParser({
    onEvent(message) {
      if (message.id === undefined) return;
      events++;
      last = message.event;
    },
  });
  res.setEncoding('utf8');
  for await (const chunk of res) parser.feed(chunk as string);
  return { events, last };
}

/**
 * Holds `count` followers of `url` open in this process, discarding what they get but
 * the last seq each reached; resolves once every one answered.
 */
export async function holdFollowers(url: string, count: number): Promise<HeldFollowers> {
  const open = await Promise.all(Array.from({ length: count }, () => openSse(url)));
  const seqs = new Float64Array(count);
  open.forEach((res, i) => {
    res.on('error', () => undefined);
    res.on('data', (chunk: Buffer) => {
      seqs[i] = lastSeqIn(chunk) ?? (seqs[i] as number);
    });
  });
  return {
    behind: async (seq) => Math.max(...seqs.map((reached) => seq - reached)),
    close: async () => open.forEach((res) => res.destroy()),
  };
}

/** Followers held open by {@link holdFollowers} or {@link holdFollowersElsewhere}. */
export interface HeldFollowers {
  /** Events the furthest-behind follower is short of `seq`. */
  behind(seq: number): Promise<number>;
  close(): Promise<void>;
}

/** Holds `count` followers of `url` open in a process of their own; resolves once every one answered. */
export async function holdFollowersElsewhere(url: string, count: number): Promise<HeldFollowers> {
  const script = fileURLToPath(new URL('./follower-child.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, FOLLOW_URL: url, FOLLOWERS: String(count) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string> => {
    const line = await Promise.race([lines.next(), exited.then(() => ({ done: true, value: undefined }))]);
    if (line.done === true || line.value === undefined) throw new Error('the follower process exited');
    return line.value as string;
  };
  if ((await nextLine()) !== 'open') throw new Error('the follower process did not open its followers');
  return {
    async behind(seq) {
      child.stdin?.write(`${seq}\n`);
      return Number(await nextLine());
    },
    async close() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Redis command calls so far (INFO commandstats; commands run inside scripts are counted there too), INFO excluded. */
export async function commandCalls(redisUrl: string): Promise<number> {
  const client = new Redis(redisUrl);
  try {
    let calls = 0;
    const stats = await client.info('commandstats');
    for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (match[1] !== 'info') calls += Number(match[2]);
    return calls;
  } finally {
    client.disconnect();
  }
}

/**
 * The raw baseline on Redis: per turn, one XADD per event (the same events, at the same
 * pace as the servers' agents) and one XREAD BLOCK loop shared by all of the turn's
 * followers (they get the entries in process). Resolves once every reader saw the end.
 */
export async function rawRedisLoop(redisUrl: string, turns: number, deltas: number, tickMs = 10): Promise<void> {
  const writer = new Redis(redisUrl);
  const readers = Array.from({ length: turns }, () => new Redis(redisUrl));
  try {
    await Promise.all(
      readers.map(async (reader, t) => {
        const key = `rawloop:${process.pid}:${Date.now()}:${t}`;
        const produced = (async () => {
          const start = performance.now();
          await writer.xadd(key, '*', 'e', JSON.stringify({ type: 'turn.start' }));
          for (let n = 0; n < deltas; n += 2) {
            const wait = start + (n / 2 + 1) * tickMs - performance.now();
            if (wait > 0) await delay(wait);
            await writer.xadd(key, '*', 'e', JSON.stringify({ type: 'delta', text: `d${String(n).padStart(14, '0')} ` }));
            if (n + 1 < deltas) await writer.xadd(key, '*', 'e', JSON.stringify({ type: 'delta', text: `d${String(n + 1).padStart(14, '0')} ` }));
          }
          await writer.xadd(key, '*', 'e', JSON.stringify({ type: 'turn.end' }));
        })();
        let lastId = '0';
        for (let ended = false; !ended; ) {
          const reply = (await reader.xread('BLOCK', 5000, 'STREAMS', key, lastId)) as [string, [string, string[]][]][] | null;
          for (const [id, fields] of reply?.[0]?.[1] ?? []) {
            lastId = id;
            if (fields[1]?.includes('turn.end')) ended = true;
          }
        }
        await produced;
      }),
    );
  } finally {
    writer.disconnect();
    for (const reader of readers) reader.disconnect();
  }
}
