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

export interface ServerChild {
  origin: string;
  /** User + system CPU of the server process so far, µs. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts bench/lib/server-child.ts in `mode`; resolves once it listens. */
export async function startServerChild(mode: 'memory' | 'redis' | 'raw', redisUrl = ''): Promise<ServerChild> {
  const script = fileURLToPath(new URL('./server-child.ts', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', script], {
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
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
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

/** Holds `count` followers of `url` open, discarding what they get; `close` cuts them all. */
export async function holdFollowers(url: string, count: number): Promise<{ close(): void }> {
  const open = await Promise.all(Array.from({ length: count }, () => openSse(url)));
  for (const res of open) {
    res.on('error', () => undefined);
    res.resume();
  }
  return { close: () => open.forEach((res) => res.destroy()) };
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
