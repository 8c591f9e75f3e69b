/**
 * The server's fast path, in one run against raw baselines (bench/lib/server-child.ts):
 * CPU of the server process per delivered event for Lifeline on the memory log and on
 * Redis against a plain Node SSE server producing the same events (two 16-character
 * deltas every 10 ms per turn); Redis commands per produced event (INFO commandstats,
 * commands inside scripts included) against a raw loop of one XADD per event and one
 * shared XREAD per turn on the same Redis; for 1, 10 and 50 followers. Then the p50 of a
 * full replay of a finished turn while 1 000 followers, caught up, follow a live one
 * (held in a process of their own, so reading their streams does not delay the timed
 * answers here), against the same replay on the idle server; and as measured before,
 * with the followers in this process, timed the moment they answered ("during
 * catch-up").
 *
 * `npm run bench -- --only server --no-build` runs it alone; with `BENCH_CPU_PROF=<dir>`
 * the server children write CPU profiles there.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { startRedisServer } from '../test/fixtures/redis.js';
import { commandCalls, followToEnd, holdFollowers, holdFollowersElsewhere, rawRedisLoop, startServerChild, type HeldFollowers, type ReplaySeen, type ServerChild } from './lib/server-clients.js';
import { fixed, median, quantile } from './lib/stats.js';

export interface PathRow {
  turns: number;
  followers: number;
  /** µs of server CPU per delivered event, median of the runs. */
  rawCpu: number;
  memoryCpu: number;
  redisCpu: number;
  /** Redis commands per produced event. */
  redisCommands: number;
  rawCommands: number;
}

/**
 * Full replays timed in one condition: p50 as this process saw it, and where that time went (p50 of each part): from
 * sending to the server's listener (`waitP50`), inside the server to the last byte handed to the socket
 * (`serverP50`), and from there to the answer read here (`deliverP50`); the fan-out slices that ran while a replay
 * was in the server, and the server's event-loop delay meanwhile.
 */
export interface ReplayTiming {
  p50: number;
  waitP50: number;
  serverP50: number;
  deliverP50: number;
  slicesP50: number;
  loopP99: number;
  /** The server's event-loop utilisation meanwhile, 0 to 1. */
  busy: number;
  /** Events the furthest-behind follower was short of the live turn's head when the timing started. */
  behind: number;
  /** The same when the timing ended (followers held in their own process only): they kept up throughout. */
  behindAfter?: number;
}

export interface ReplayRow {
  log: string;
  idle: ReplayTiming;
  /** Followers in this process, timed the moment the last one answered (the method before). */
  catchUp: ReplayTiming;
  /** Followers in their own process, every one caught up to the live turn's head. */
  loaded: ReplayTiming;
}

export interface ServerPathResult {
  deltas: number;
  runs: number;
  rows: PathRow[];
  replay: ReplayRow[];
  replayFollowers: number;
  replayEvents: number;
}

const SHAPES = [
  { turns: 4, followers: 1 },
  { turns: 4, followers: 10 },
  { turns: 1, followers: 50 },
];

/** Submits a turn of `deltas` deltas; the URL its followers open. */
async function startTurn(server: ServerChild, mode: 'memory' | 'redis' | 'raw', deltas: number, n: number): Promise<{ follow: string; replay: string }> {
  if (mode === 'raw') {
    const { turnId } = (await (await fetch(`${server.origin}/turns?deltas=${deltas}`, { method: 'POST' })).json()) as { turnId: string };
    return { follow: `${server.origin}/turns/${turnId}/events`, replay: '' };
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

let turnCount = 0;

/** `turns` turns with `followers` each, followed to their end: server CPU µs per delivered event. */
async function cpuPerEvent(server: ServerChild, mode: 'memory' | 'redis' | 'raw', turns: number, followers: number, deltas: number): Promise<number> {
  const before = await server.cpu();
  const counts = await Promise.all(
    Array.from({ length: turns }, async () => {
      const { follow } = await startTurn(server, mode, deltas, turnCount++);
      const ends = await Promise.all(Array.from({ length: followers }, () => followToEnd(follow)));
      for (const end of ends) if (end.last !== 'turn.end' || end.events !== deltas + 2) throw new Error(`${mode}: a follower got ${end.events} events, last ${end.last}`);
      return ends.length * (deltas + 2);
    }),
  );
  const delivered = counts.reduce((sum, count) => sum + count, 0);
  return ((await server.cpu()) - before) / delivered;
}

/** Absolute ms, comparable with the server child's (see ReplaySeen). */
const wallNow = (): number => performance.timeOrigin + performance.now();

/** `times` full replays one after the other: when each was sent and read to its end, absolute ms. */
async function replayTimes(url: string, times: number): Promise<{ sent: number; end: number }[]> {
  const timed: { sent: number; end: number }[] = [];
  for (let i = 0; i < times; i++) {
    const sent = wallNow();
    const response = await fetch(url, { headers: { 'x-bench-sent': String(sent) } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`replay answered ${response.status}`);
    timed.push({ sent, end: wallNow() });
  }
  return timed;
}

/** Times `times` full replays of `url`, with what the server saw meanwhile. */
async function timeReplays(server: ServerChild, url: string, times: number, behind: number): Promise<ReplayTiming> {
  await server.stats();
  const here = await replayTimes(url, times);
  const { replays, loopP99, busy } = await server.stats();
  const seen = new Map(replays.map((replay) => [replay.sent, replay]));
  const part = (of: (sent: number, end: number, replay: ReplaySeen) => number): number =>
    quantile(here.flatMap(({ sent, end }) => (seen.has(sent) ? [of(sent, end, seen.get(sent) as ReplaySeen)] : [])), 0.5);
  return {
    p50: quantile(here.map(({ sent, end }) => end - sent), 0.5),
    waitP50: part((sent, _end, replay) => replay.start - sent),
    serverP50: part((_sent, _end, replay) => replay.finish - replay.start),
    deliverP50: part((_sent, end, replay) => end - replay.finish),
    slicesP50: part((_sent, _end, replay) => replay.slices),
    loopP99,
    busy,
    behind,
  };
}

/** The live turn's last logged seq (one event replayed, for its turn record). */
async function headOf(replayUrl: string): Promise<number> {
  const response = await fetch(replayUrl.replace('limit=10000', 'limit=1'));
  return ((await response.json()) as { turn: { lastSeq: number } }).turn.lastSeq;
}

/** A follower this many events behind the head (100 ms of the agent's pace) has caught up. */
const CAUGHT_UP_EVENTS = 20;

/** Resolves once every held follower is within CAUGHT_UP_EVENTS of the live turn's head; the events the last look found. */
async function caughtUp(held: HeldFollowers, liveReplay: string): Promise<number> {
  for (;;) {
    const behind = await held.behind(await headOf(liveReplay));
    if (behind <= CAUGHT_UP_EVENTS) return behind;
    await delay(100);
  }
}

/**
 * Full replay p50 of a finished turn: on the idle server; then while `followers` follow a
 * live turn, timed the moment the last follower answered with the followers in this
 * process (the method before; the bench's own loop reading 1 000 streams delays the
 * answers it times); then with the followers in their own process, every one caught up.
 */
async function replayUnderLoad(server: ServerChild, mode: 'memory' | 'redis', deltas: number, followers: number): Promise<Omit<ReplayRow, 'log'>> {
  const finished = await startTurn(server, mode, deltas, turnCount++);
  await followToEnd(finished.follow);
  // Warm: V8 optimises the replay path over its first few hundred calls; after 10, the idle figure measured that too.
  await replayTimes(finished.replay, 300);
  const idle = await timeReplays(server, finished.replay, 40, 0);
  // Long enough to outlast each measurement: 30 s of events at the agent's pace.
  const first = await startTurn(server, mode, 6000, turnCount++);
  const near = await holdFollowers(first.follow, followers);
  let catchUp: ReplayTiming;
  try {
    const behind = await near.behind(await headOf(first.replay));
    catchUp = await timeReplays(server, finished.replay, 40, behind);
  } finally {
    await near.close();
  }
  const second = await startTurn(server, mode, 6000, turnCount++);
  const apart = await holdFollowersElsewhere(second.follow, followers);
  try {
    const behind = await caughtUp(apart, second.replay);
    const loaded = await timeReplays(server, finished.replay, 40, behind);
    loaded.behindAfter = await apart.behind(await headOf(second.replay));
    return { idle, catchUp, loaded };
  } finally {
    await apart.close();
  }
}

/** Where a replay's time went, for the log. */
const parts = (timing: ReplayTiming): string =>
  `to the listener ${fixed(timing.waitP50, 2)}, in the server ${fixed(timing.serverP50, 2)}, to the bench ${fixed(timing.deliverP50, 2)} ms; ${fixed(timing.slicesP50, 0)} fan-out slices meanwhile; server loop delay p99 ${fixed(timing.loopP99, 1)} ms, busy ${fixed(timing.busy * 100, 0)} %`;

/** The CPU and Redis-command rows: every shape warmed up twice, then measured `runs` times. */
async function cpuRows(servers: Record<'raw' | 'memory' | 'redis', ServerChild>, redisUrl: string, runs: number, deltas: number, log: (line: string) => void): Promise<PathRow[]> {
  const rows: PathRow[] = [];
  // Warm-up, nothing measured yet, so the three servers at once: every shape twice, at full length. V8 compiles
  // a server's hot code over its first few thousand events (its compiler threads count in the process's CPU):
  // after a warm-up of a few hundred events, the first row measured mostly that, falling run after run (4 × 1 on
  // Redis: ~380, 245, 210, 130, 110, 95, 95 µs per event in consecutive runs; raw SSE ~150 to 55).
  await Promise.all(
    (['raw', 'memory', 'redis'] as const).map(async (mode) => {
      for (let pass = 0; pass < 2; pass++) for (const { turns, followers } of SHAPES) await cpuPerEvent(servers[mode], mode, turns, followers, deltas);
    }),
  );
  for (const { turns, followers } of SHAPES) {
    const samples = { raw: [] as number[], memory: [] as number[], redis: [] as number[], redisCommands: [] as number[], rawCommands: [] as number[] };
    for (let run = 0; run < runs; run++) {
      samples.raw.push(await cpuPerEvent(servers.raw, 'raw', turns, followers, deltas));
      samples.memory.push(await cpuPerEvent(servers.memory, 'memory', turns, followers, deltas));
      const calls = await commandCalls(redisUrl);
      samples.redis.push(await cpuPerEvent(servers.redis, 'redis', turns, followers, deltas));
      const afterLifeline = await commandCalls(redisUrl);
      await rawRedisLoop(redisUrl, turns, deltas);
      const produced = turns * (deltas + 2);
      samples.redisCommands.push((afterLifeline - calls) / produced);
      samples.rawCommands.push(((await commandCalls(redisUrl)) - afterLifeline) / produced);
    }
    const row: PathRow = {
      turns,
      followers,
      rawCpu: median(samples.raw),
      memoryCpu: median(samples.memory),
      redisCpu: median(samples.redis),
      redisCommands: median(samples.redisCommands),
      rawCommands: median(samples.rawCommands),
    };
    log(`  ${turns} × ${followers}: raw ${fixed(row.rawCpu)} µs, memory ${fixed(row.memoryCpu)} µs, redis ${fixed(row.redisCpu)} µs per event; ${fixed(row.redisCommands, 2)} vs raw ${fixed(row.rawCommands, 2)} commands per produced event`);
    rows.push(row);
  }
  return rows;
}

export async function benchServerPath(options: {
  log: (line: string) => void;
  runs?: number;
  deltas?: number;
  replayFollowers?: number;
  /** Only the replay part (no CPU rows, no raw server): `--only server-replay`. */
  replayOnly?: boolean;
}): Promise<ServerPathResult> {
  const { log, replayOnly = false } = options;
  const runs = options.runs ?? 3;
  const deltas = options.deltas ?? 400;
  const replayFollowers = options.replayFollowers ?? 1000;
  const redis = await startRedisServer();
  const servers = {
    raw: replayOnly ? undefined : await startServerChild('raw'),
    memory: await startServerChild('memory'),
    redis: await startServerChild('redis', redis.url),
  };
  const rows: PathRow[] = [];
  try {
    if (!replayOnly) rows.push(...(await cpuRows({ memory: servers.memory, redis: servers.redis, raw: servers.raw as ServerChild }, redis.url, runs, deltas, log)));
    const replay: ReplayRow[] = [];
    for (const mode of ['memory', 'redis'] as const) {
      const row = { log: mode === 'memory' ? 'memory log' : 'Redis', ...(await replayUnderLoad(servers[mode], mode, deltas, replayFollowers)) };
      const { idle, catchUp, loaded } = row;
      log(
        `  replay on ${mode}: p50 ${fixed(idle.p50, 2)} ms idle (${parts(idle)}); ${fixed(loaded.p50, 2)} ms under ${replayFollowers} caught-up followers (${parts(loaded)}; followers ${loaded.behind} → ${loaded.behindAfter ?? '?'} events behind); ${fixed(catchUp.p50, 2)} ms during catch-up (followers ${catchUp.behind} events behind, in this process)`,
      );
      replay.push(row);
    }
    return { deltas, runs, rows, replay, replayFollowers, replayEvents: deltas + 2 };
  } finally {
    for (const server of Object.values(servers)) await server?.stop();
    await redis.stop();
  }
}

/**
 * The figures before the fan-out reader, the append queue and the 1 s heartbeat, as an
 * outside probe measured them with the same workload (not re-measurable here: that code
 * is gone); printed beside this run's so the change is visible in one place.
 */
const BEFORE = [
  'Before (the same workload measured from outside before the shared reader, the coalesced appends and the 1 s heartbeat; not re-run here):',
  '',
  '| turns × followers | Redis µs / delivered event | memory log µs | raw SSE µs | Redis / raw | memory / raw | Redis commands / produced event |',
  '|---|---:|---:|---:|---:|---:|---:|',
  '| 4 × 1 | 267 | 105 | 62 | 4.3× | 1.7× | 7.2 |',
  '| 4 × 10 | 59–62 | 23–27 | 10–12 | 5.1–6.2× | 2.3× | 25.9 |',
  '| 1 × 50 | 61 | 24 | 8.4 | 7.2× | 2.8× | 129 |',
  '',
  'Replay p50 under 1 000 followers of one turn, before: 67 ms on Redis, 1.7 ms on the memory log.',
].join('\n');

const verdict = (ratio: number, target: number): string => (ratio <= target ? 'met' : '**not met**');

function cpuReport(result: ServerPathResult): string[] {
  const { rows } = result;
  const lines = [
    `Each turn: ${result.deltas} deltas of 16 characters, two every 10 ms, plus turn.start and turn.end; the server in its own process (bench/lib/server-child.ts), its CPU from \`process.cpuUsage\` over the whole turn (submit, produce, log, fan-out, write); followers over HTTP in the benchmark's process. Median of ${result.runs} runs. Redis commands: INFO commandstats calls (commands inside scripts counted too) over the turn's whole life, all its followers included, per produced event; the raw loop is one XADD per event and one shared XREAD BLOCK per turn on the same Redis. Targets: ≤ 2× raw SSE CPU, ≤ 1.5× raw Redis commands, flat in followers.`,
    '',
    '| turns × followers | raw SSE µs / delivered event | memory log µs | memory / raw | Redis µs | Redis / raw | Redis commands / produced event | raw XADD + XREAD | commands / raw |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.turns} × ${row.followers} | ${fixed(row.rawCpu)} | ${fixed(row.memoryCpu)} | ${fixed(row.memoryCpu / row.rawCpu, 2)}× | ${fixed(row.redisCpu)} | ${fixed(row.redisCpu / row.rawCpu, 2)}× | ${fixed(row.redisCommands, 2)} | ${fixed(row.rawCommands, 2)} | ${fixed(row.redisCommands / row.rawCommands, 2)}× |`,
    );
  }
  const worstMemory = Math.max(...rows.map((row) => row.memoryCpu / row.rawCpu));
  const worstRedis = Math.max(...rows.map((row) => row.redisCpu / row.rawCpu));
  const worstCommands = Math.max(...rows.map((row) => row.redisCommands / row.rawCommands));
  const commands = rows.map((row) => row.redisCommands);
  lines.push(
    '',
    `**Worst CPU ratio: memory log ${fixed(worstMemory, 2)}× (target ≤ 2: ${verdict(worstMemory, 2)}), Redis ${fixed(worstRedis, 2)}× (${verdict(worstRedis, 2)}); worst Redis commands ratio ${fixed(worstCommands, 2)}× (target ≤ 1.5: ${verdict(worstCommands, 1.5)}); commands per produced event from 1 to 50 followers: ${commands.map((value) => fixed(value, 2)).join(', ')}.**`,
  );
  return lines;
}

/** The replay table (see {@link replayUnderLoad}). */
function replayReport(result: ServerPathResult): string[] {
  const { replay } = result;
  return [
    `Full replay (one request, \`after=0&limit=10000\`) of a finished ${result.replayEvents}-event turn, p50 of 40 as the bench's process sees it, on the idle server and while ${result.replayFollowers} followers follow one live turn on it (target: within 2× of idle). *Under ${result.replayFollowers} followers*: the followers in a process of their own, every one within ${CAUGHT_UP_EVENTS} events of the live turn's head before the timing starts. *During catch-up* (the method before): the followers in the bench's own process, timed the moment the last one answered; reading their streams keeps that process's event loop busy, which delays the answers it times. Where the time went (p50 of each part, clocks of both processes on one machine): *to the listener* from the bench sending the request to the server's listener call (the client's own send, then the request waiting for the server's event loop); *in the server* from there to the answer's last byte handed to the socket; *to the bench* from there to the answer read in the bench's process; *slices*: the fan-out's slices (setImmediate calls) that ran while a replay was in the server; loop p99 and busy: the server's event-loop delay and utilisation while the replays ran. The followers stayed within the catch-up bound while the replays ran (checked again after them).`,
    '',
    '| log | idle p50 ms | under load p50 ms | ratio | to the listener ms, idle → under load | in the server ms | to the bench ms | slices in the server, under load | server loop p99 ms / busy, under load | during catch-up p50 ms (followers behind) | ratio |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...replay.map(({ log, idle, loaded, catchUp }) => {
      const ratio = loaded.p50 / idle.p50;
      const change = (of: (timing: ReplayTiming) => number): string => `${fixed(of(idle), 2)} → ${fixed(of(loaded), 2)}`;
      return `| ${log} | ${fixed(idle.p50, 2)} | ${fixed(loaded.p50, 2)} | ${fixed(ratio, 2)}× (${verdict(ratio, 2)}) | ${change((timing) => timing.waitP50)} | ${change((timing) => timing.serverP50)} | ${change((timing) => timing.deliverP50)} | ${fixed(loaded.slicesP50, 0)} | ${fixed(loaded.loopP99, 1)} / ${fixed(loaded.busy * 100, 0)} % | ${fixed(catchUp.p50, 2)} (${catchUp.behind} events) | ${fixed(catchUp.p50 / idle.p50, 2)}× |`;
    }),
  ];
}

export function serverPathReport(result: ServerPathResult): string {
  const cpu = result.rows.length > 0 ? [...cpuReport(result), ''] : [];
  return [...cpu, ...replayReport(result), '', BEFORE].join('\n');
}
