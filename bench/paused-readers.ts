/**
 * Server memory per paused reader: the reference server (memory log, in this process)
 * holds one finished turn of 2000 deltas × 4000 characters (8 MB); `readers` raw
 * connections follow it and never read. Once every connection's server side waits for
 * `drain`, the process's memory (heap + array buffers, after forced GC) is compared
 * with before they connected. Also reported: the largest unsent buffer of one connection
 * (`ServerResponse.writableLength`) and how long a `limit=1` replay takes meanwhile.
 *
 * `npx tsx bench/paused-readers.ts [readers]` runs it alone, as does `npm run bench -- --only readers --no-build`.
 */
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLifelineHandler } from '../src/server/http/handler.js';
import { createMemoryTurnLog } from '../src/server/log/memory/index.js';
import { toNodeListener } from '../src/server/node/index.js';
import type { Agent } from '../src/server/producer/agent.js';
import { fixed, int } from './lib/stats.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const DELTAS = 2000;
const DELTA_CHARS = 4000;
const MiB = 1024 * 1024;

export interface PausedReadersResult {
  readers: number;
  turnBytes: number;
  /** Heap + array buffers held per paused reader, bytes. */
  perReader: number;
  rssPerReader: number;
  maxUnsent: number;
  replayMs: number;
}

const bigAgent: Agent = async function* () {
  for (let i = 0; i < DELTAS; i++) yield { type: 'delta', text: String.fromCharCode(97 + (i % 26)).repeat(DELTA_CHARS) };
};

function held(): { heap: number; rss: number } {
  gc();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed + usage.arrayBuffers, rss: usage.rss };
}

async function until(condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the readers to stall');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function benchPausedReaders(options: { readers?: number; log?: (line: string) => void } = {}): Promise<PausedReadersResult> {
  const readers = options.readers ?? 50;
  const log = createMemoryTurnLog();
  const handler = createLifelineHandler({ agent: bigAgent, store: log, maxTextPerTurn: DELTAS * DELTA_CHARS, onError: () => undefined });
  const streams = new Set<ServerResponse>();
  const listener = toNodeListener(handler);
  const server = createServer((req, res) => {
    if (req.url?.endsWith('/events')) streams.add(res);
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sockets: Socket[] = [];
  try {
    const submitted = await fetch(`${origin}/conversations/c/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'bench-paused-readers-1' },
      body: JSON.stringify({ content: 'big' }),
    });
    const { turnId } = (await submitted.json()) as { turnId: string };
    for (;;) {
      const turn = await log.getTurn(turnId);
      if (turn !== undefined && 'endedAt' in turn && turn.endedAt !== undefined) break;
      await log.waitForEvents(turnId, turn && 'lastSeq' in turn ? turn.lastSeq : 0, { signal: new AbortController().signal, timeoutMs: 1000 });
    }
    const before = held();
    for (let i = 0; i < readers; i++) {
      const socket = connect({ host: '127.0.0.1', port: Number(new URL(origin).port) });
      socket.on('error', () => undefined);
      socket.pause();
      socket.write(`GET /turns/${turnId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      sockets.push(socket);
    }
    await until(() => streams.size === readers && [...streams].every((res) => res.writableNeedDrain));
    const maxUnsent = Math.max(...[...streams].map((res) => res.writableLength));
    const started = performance.now();
    await (await fetch(`${origin}/turns/${turnId}?limit=1`)).json();
    const replayMs = performance.now() - started;
    const after = held();
    const result: PausedReadersResult = {
      readers,
      turnBytes: DELTAS * DELTA_CHARS,
      perReader: (after.heap - before.heap) / readers,
      rssPerReader: (after.rss - before.rss) / readers,
      maxUnsent,
      replayMs,
    };
    options.log?.(`  ${readers} paused readers: ${fixed(result.perReader / 1024, 0)} KiB heap+buffers each, largest unsent ${fixed(maxUnsent / 1024, 0)} KiB`);
    return result;
  } finally {
    for (const socket of sockets) socket.destroy();
    await handler.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

export function pausedReadersReport(result: PausedReadersResult): string {
  return [
    `One finished turn of ${int(DELTAS)} deltas × ${int(DELTA_CHARS)} characters (${fixed(result.turnBytes / MiB, 1)} MiB), ${result.readers} raw connections following it that never read; memory log, server in the benchmark's process, after forced GC. Bound: about 1 MiB unsent per connection.`,
    '',
    '| paused readers | heap + buffers per reader | RSS per reader | largest unsent (one connection) | `limit=1` replay meanwhile |',
    '|---:|---:|---:|---:|---:|',
    `| ${result.readers} | ${fixed(result.perReader / 1024, 0)} KiB | ${fixed(result.rssPerReader / 1024, 0)} KiB | ${fixed(result.maxUnsent / 1024, 0)} KiB | ${fixed(result.replayMs, 1)} ms |`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await benchPausedReaders({ readers: Number(process.argv[2] ?? 50), log: console.log });
  console.log(pausedReadersReport(result));
}
