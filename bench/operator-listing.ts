/**
 * Operator listing cost (docs/protocol.md section 11): one principal's undelivered and failed
 * turns, and the newest undelivered turns of everyone, listed through the handler's operator
 * route while the log holds 1 000, then 100 000 ended turns of other principals, on the
 * memory log and on Redis, in the same run. Measured per listing: wall time (median), and
 * the store's work: turn records read (memory) or commands Redis processed (INFO
 * commandstats). The index promises work proportional to the turns listed, so work per
 * listed turn should not move with the background.
 *
 *   npx tsx bench/operator-listing.ts [--background 1000,100000] [--listings 30]
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { sha256Hex } from '../src/protocol/integrity.js';
import { createLifelineHandler } from '../src/server/http/handler.js';
import { createMemoryTurnLog } from '../src/server/log/memory/index.js';
import { createRedisTurnLog } from '../src/server/log/redis/index.js';
import type { TurnLog } from '../src/server/log/turn-log.js';
import { startRedisServer } from '../test/fixtures/redis.js';
import { fixed, int, median } from './lib/stats.js';

export interface ListingOptions {
  /** Other principals' turns in the log, one measurement each. Default 1 000 and 100 000. */
  background?: readonly number[];
  /** Listings per query and size. Default 30. */
  listings?: number;
  log?: (line: string) => void;
}

export interface ListingResult {
  store: string;
  background: number;
  query: string;
  listed: number;
  medianUs: number;
  workPerListing: number;
}

interface MeasuredLog {
  name: string;
  log: TurnLog;
  /** Store work so far: records read, or Redis commands processed. */
  work(): Promise<number>;
  close(): Promise<void>;
}

const TARGET = 'support-target';
const TARGET_TURNS = 40;
const WINDOW_MS = 60_000;
const QUERIES = [`state=undelivered&principal=${TARGET}&limit=50`, `state=failed&principal=${TARGET}&limit=50`, 'state=undelivered&limit=50'];

/** A clock the bench moves past the undelivered window without waiting for it. */
function benchClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => void (offset += ms) };
}

function memoryLog(now: () => number): MeasuredLog {
  const log = createMemoryTurnLog({ now });
  let reads = 0;
  // Wrapped by prototype (memory/index.ts allows it): every turn record the listing reads is counted.
  const wrapped: TurnLog = Object.create(log) as TurnLog;
  wrapped.getTurn = (turnId) => (reads++, log.getTurn(turnId));
  return { name: 'memory', log: wrapped, work: async () => reads, close: () => log.close() };
}

async function redisLog(now: () => number): Promise<MeasuredLog> {
  const server = await startRedisServer();
  const log = createRedisTurnLog({ url: server.url, now });
  const admin = new Redis(server.url);
  const calls = /^cmdstat_[^:]+:calls=(\d+)/gm;
  return {
    name: 'redis',
    log,
    // Every command but the INFO asking (counted once per ask, subtracted by the caller's pairing).
    work: async () => [...(await admin.info('commandstats')).matchAll(calls)].reduce((sum, match) => sum + Number(match[1]), 0),
    async close() {
      admin.disconnect();
      await log.close();
      await server.stop();
    },
  };
}

/** Ended turns straight into the log (create, turn.start, turn.end), `concurrency` at a time. */
async function fill(log: TurnLog, ids: readonly string[], principalOf: (i: number) => string, createdAt: string, concurrency = 500): Promise<void> {
  const empty = await sha256Hex('');
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const id = ids[i]!;
      await log.createTurn({ id, conversationId: `conv-${i % 997}`, messageId: `m-${id}`, principal: principalOf(i), content: 'x', createdAt });
      await log.append(id, { type: 'turn.start', messageId: `m-${id}`, conversationId: `conv-${i % 997}`, createdAt });
      await log.append(id, { type: 'turn.end', status: i % 4 === 0 ? 'failed' : 'complete', textLength: 0, textSha256: empty });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

async function measureStore(open: (now: () => number) => MeasuredLog | Promise<MeasuredLog>, background: number, options: Required<ListingOptions>): Promise<ListingResult[]> {
  const clock = benchClock();
  const store = await open(clock.now);
  const handler = createLifelineHandler({
    agent: async function* () {},
    store: store.log,
    now: clock.now,
    onError: () => {},
    authorizeOperator: () => 'bench',
    audit: () => {},
    undeliveredAfterMs: WINDOW_MS,
  });
  try {
    const createdAt = new Date(clock.now()).toISOString();
    const started = performance.now();
    await fill(store.log, Array.from({ length: TARGET_TURNS }, (_, i) => `target-${i}`), () => TARGET, createdAt);
    await fill(store.log, Array.from({ length: background }, (_, i) => `other-${i}`), (i) => `user-${i % 1000}`, createdAt);
    options.log(`  ${store.name}: ${int(background + TARGET_TURNS)} turns logged in ${fixed((performance.now() - started) / 1000)} s`);
    clock.advance(WINDOW_MS + 1000);
    const results: ListingResult[] = [];
    for (const query of QUERIES) {
      const list = async () => {
        const response = await handler(new Request(`http://bench/operator/turns?${query}`));
        if (response.status !== 200) throw new Error(`${query} answered ${response.status}`);
        return ((await response.json()) as { turns: unknown[] }).turns.length;
      };
      // Warm-up listings: the route's and the store's code paths compiled before timing.
      for (let run = 0; run < 50; run++) await list();
      const times: number[] = [];
      const works: number[] = [];
      let listed = 0;
      for (let run = 0; run < options.listings; run++) {
        const before = await store.work();
        const start = performance.now();
        listed = await list();
        times.push((performance.now() - start) * 1000);
        // The INFO that read `before` is itself one command on Redis.
        works.push((await store.work()) - before - (store.name === 'redis' ? 1 : 0));
      }
      results.push({ store: store.name, background, query, listed, medianUs: median(times), workPerListing: median(works) });
    }
    return results;
  } finally {
    await handler.close();
    await store.close();
  }
}

export async function benchOperatorListing(input: ListingOptions = {}): Promise<ListingResult[]> {
  const options: Required<ListingOptions> = { background: [1000, 100_000], listings: 30, log: () => {}, ...input };
  const results: ListingResult[] = [];
  for (const open of [memoryLog, redisLog]) {
    for (const background of options.background) results.push(...(await measureStore(open, background, options)));
  }
  return results;
}

export function operatorListingReport(results: readonly ListingResult[]): string {
  const [small, large] = [Math.min(...results.map((r) => r.background)), Math.max(...results.map((r) => r.background))];
  const rows = results.filter((r) => r.background === large).map((r) => {
    const base = results.find((b) => b.store === r.store && b.query === r.query && b.background === small)!;
    return `| ${r.store} | \`${r.query}\` | ${r.listed} | ${fixed(base.medianUs / 1000, 2)} | ${fixed(r.medianUs / 1000, 2)} | ${fixed(r.medianUs / base.medianUs, 2)}× | ${fixed(base.workPerListing / Math.max(1, base.listed), 2)} | ${fixed(r.workPerListing / Math.max(1, r.listed), 2)} |`;
  });
  return [
    `One principal's ${TARGET_TURNS} turns beside ${int(small)}, then ${int(large)} ended turns of 1 000 other principals, listed through \`GET /operator/turns\` in-process; median of the listings. Work: turn records read (memory) or commands Redis processed (redis).`,
    '',
    `| store | query | listed | ms, ${int(small)} others | ms, ${int(large)} others | ratio | work per listed turn, ${int(small)} | work per listed turn, ${int(large)} |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { values } = parseArgs({ options: { background: { type: 'string' }, listings: { type: 'string' } } });
  const results = await benchOperatorListing({
    ...(values.background && { background: values.background.split(',').map(Number) }),
    ...(values.listings && { listings: Number(values.listings) }),
    log: (line) => console.log(line),
  });
  console.log(operatorListingReport(results));
}
