/**
 * Which Redis commands one turn costs, and which of them grow with its followers: one
 * turn of the server bench's shape (bench/lib/server-child.ts, 400 deltas, two every
 * 10 ms) on a private redis-server, by default with 1 and with 50 followers, every command seen by
 * MONITOR counted by name and by origin (`lua` = inside a script). Prints a table per
 * follower count and the commands per produced event.
 *
 * `node --import tsx bench/redis-breakdown.ts [deltas] [<turns>x<followers>…]` (defaults: 400, then 1x1 and 1x50).
 */
import { Redis } from 'ioredis';
import { startRedisServer } from '../test/fixtures/redis.js';
import { followToEnd, startServerChild, type ServerChild } from './lib/server-clients.js';

const deltas = Number(process.argv[2] ?? 400);
/** `<turns>x<followers>` each, e.g. `4x10`; a bare number is one turn with that many followers. */
const shapes = process.argv.slice(3).map((shape) => {
  const [turns, followers] = shape.includes('x') ? shape.split('x').map(Number) : [1, Number(shape)];
  return { turns: turns as number, followers: followers as number };
});
if (shapes.length === 0) shapes.push({ turns: 1, followers: 1 }, { turns: 1, followers: 50 });

let submitted = 0;

async function oneTurn(server: ServerChild, followers: number): Promise<void> {
  const n = submitted++;
  const response = await fetch(`${server.origin}/api/conversations/breakdown-${n}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `breakdown-key-${process.pid}-${Date.now()}-${n}` },
    body: JSON.stringify({ content: String(deltas) }),
  });
  if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
  const { turnId } = (await response.json()) as { turnId: string };
  const ends = await Promise.all(Array.from({ length: followers }, () => followToEnd(`${server.origin}/api/turns/${turnId}/events`)));
  for (const end of ends) if (end.last !== 'turn.end' || end.events !== deltas + 2) throw new Error(`a follower got ${end.events} events`);
}

const redis = await startRedisServer();
const server = await startServerChild('redis', redis.url);
try {
  await oneTurn(server, 2); // warm-up: scripts loaded, connections open
  for (const { turns, followers } of shapes) {
    const monitor = new Redis(redis.url);
    const counts = new Map<string, number>();
    const feed = await new Promise<Redis>((resolve, reject) => {
      monitor.monitor((error, feed) => {
        if (error || !feed) return reject(error);
        feed.on('monitor', (_time: string, args: string[], source: string) => {
          const key = `${/lua/.test(source) ? 'lua' : 'client'} ${(args[0] ?? '').toLowerCase()}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        });
        resolve(feed);
      });
    });
    // Lingering work of the previous turn (lease renewals stop, waiter linger) is not this turn's.
    await new Promise((resolve) => setTimeout(resolve, 500));
    counts.clear();
    await Promise.all(Array.from({ length: turns }, () => oneTurn(server, followers)));
    const atEnd = [...counts.values()].reduce((sum, count) => sum + count, 0);
    // The turn's tail: its last renewals and reads, until the server is quiet.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    feed.disconnect();
    monitor.disconnect();
    const produced = turns * (deltas + 2);
    const rows = [...counts].sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((sum, [, count]) => sum + count, 0);
    console.log(`\n${turns} turn(s) × ${followers} follower(s), ${produced} events: ${total} commands, ${(total / produced).toFixed(2)} per produced event (${atEnd} by the followers' end)`);
    for (const [name, count] of rows) console.log(`  ${name.padEnd(22)} ${String(count).padStart(6)}  ${(count / produced).toFixed(3)}/event`);
  }
} finally {
  await server.stop();
  await redis.stop();
}
