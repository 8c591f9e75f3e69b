/**
 * The replay part of bench/server-path.ts: the p50 of a full replay of a finished turn
 * on the idle server, while 1 000 followers follow a live turn held in a process of
 * their own (every one caught up before the timing starts, and checked again after),
 * and as measured before with the followers in this process ("during catch-up"). Each
 * figure is split into where its time went, from the server child's own clocks
 * (bench/lib/server-child.ts): to the listener, in the server, to the bench.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { followToEnd, holdFollowers, holdFollowersElsewhere, startTurn, type HeldFollowers, type ReplaySeen, type ServerChild } from './lib/server-clients.js';
import { fixed, median, quantile } from './lib/stats.js';

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
  /** The raw Node SSE server: the floor the logs are read against, no target of its own. */
  baseline: boolean;
  /** The idle figure before the first loaded round (the table's idle column). */
  idle: ReplayTiming;
  /** Followers in this process, timed the moment the last one answered (the method before). */
  catchUp: ReplayTiming;
  /** The loaded round whose ratio is the median: followers in their own process, every one caught up. */
  loaded: ReplayTiming;
  /**
   * Each loaded round's p50 over the mean of the idle p50s just before and just after it:
   * the machine's own drift (idle p50s of one server moved 1.1-2.3 ms between runs) counts
   * on both sides of every ratio.
   */
  ratios: number[];
}

/** ms on the machine's monotonic clock, comparable with the server child's (see ReplaySeen). */
const sharedNow = (): number => Number(process.hrtime.bigint()) / 1e6;

/** `times` full replays one after the other: when each was sent and read to its end, ms on the shared monotonic clock. */
async function replayTimes(url: string, times: number): Promise<{ sent: number; end: number }[]> {
  const timed: { sent: number; end: number }[] = [];
  for (let i = 0; i < times; i++) {
    const sent = sharedNow();
    const response = await fetch(url, { headers: { 'x-bench-sent': String(sent) } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`replay answered ${response.status}`);
    timed.push({ sent, end: sharedNow() });
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

/** Longest wait for the followers to catch up: the raw baseline writes every frame to every follower and may never. */
const CATCH_UP_MS = 5_000;

/**
 * Resolves once every held follower is within CAUGHT_UP_EVENTS of the live turn's head, or CATCH_UP_MS passed;
 * the events the last look found (the report shows them, so a server that could not keep up is plain).
 */
async function caughtUp(held: HeldFollowers, liveReplay: string): Promise<number> {
  const until = performance.now() + CATCH_UP_MS;
  for (;;) {
    const behind = await held.behind(await headOf(liveReplay));
    if (behind <= CAUGHT_UP_EVENTS || performance.now() > until) return behind;
    await delay(100);
  }
}

/** Ends a live turn started for load, so it does not load the server after its round. */
async function cancelTurn(replayUrl: string): Promise<void> {
  const response = await fetch(replayUrl.replace(/\?.*$/, '/cancel'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  await response.arrayBuffer();
  if (response.status !== 202 && response.status !== 200) throw new Error(`cancel answered ${response.status}`);
}

/**
 * Loaded rounds, each between two idle measurements. Five: one round's ratio moved
 * between 1.1 and 3.1 in one run on this 2-core machine, so a median of three still swings.
 */
const ROUNDS = 5;

/**
 * Full replay p50 of a finished turn: on the idle server; then while `followers` follow a
 * live turn, timed the moment the last follower answered with the followers in this
 * process (the method before; the bench's own loop reading 1 000 streams delays the
 * answers it times); then ROUNDS times with the followers in their own process, every
 * one caught up, each round between two idle measurements. Each live turn is cancelled
 * when its round ends.
 */
export async function replayUnderLoad(server: ServerChild, mode: 'memory' | 'redis' | 'raw', deltas: number, followers: number): Promise<Omit<ReplayRow, 'log' | 'baseline'>> {
  const finished = await startTurn(server, mode, deltas);
  await followToEnd(finished.follow);
  // Warm: V8 optimises the replay path over its first few hundred calls; after 10, the idle figure measured that too.
  await replayTimes(finished.replay, 300);
  // Long enough to outlast each measurement: 30 s of events at the agent's pace.
  const first = await startTurn(server, mode, 6000);
  const near = await holdFollowers(first.follow, followers);
  let catchUp: ReplayTiming;
  try {
    const behind = await near.behind(await headOf(first.replay));
    catchUp = await timeReplays(server, finished.replay, 40, behind);
  } finally {
    await near.close();
    await cancelTurn(first.replay);
  }
  const idles = [await timeReplays(server, finished.replay, 40, 0)];
  const rounds: ReplayTiming[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const live = await startTurn(server, mode, 6000);
    const apart = await holdFollowersElsewhere(live.follow, followers);
    try {
      const behind = await caughtUp(apart, live.replay);
      const loaded = await timeReplays(server, finished.replay, 40, behind);
      loaded.behindAfter = await apart.behind(await headOf(live.replay));
      rounds.push(loaded);
    } finally {
      await apart.close();
      await cancelTurn(live.replay);
    }
    idles.push(await timeReplays(server, finished.replay, 40, 0));
  }
  const ratios = rounds.map((loaded, i) => loaded.p50 / ((idles[i] as ReplayTiming).p50 / 2 + (idles[i + 1] as ReplayTiming).p50 / 2));
  const middle = ratios.indexOf([...ratios].sort((x, y) => x - y)[Math.floor(ROUNDS / 2)] as number);
  return { idle: idles[0] as ReplayTiming, catchUp, loaded: rounds[middle] as ReplayTiming, ratios };
}

/** Where a replay's time went, for the log. */
export const replayParts = (timing: ReplayTiming): string =>
  `to the listener ${fixed(timing.waitP50, 2)}, in the server ${fixed(timing.serverP50, 2)}, to the bench ${fixed(timing.deliverP50, 2)} ms; ${fixed(timing.slicesP50, 0)} fan-out slices meanwhile; server loop delay p99 ${fixed(timing.loopP99, 1)} ms, busy ${fixed(timing.busy * 100, 0)} %`;

const verdict = (ratio: number, target: number): string => (ratio <= target ? 'met' : '**not met**');

/** The replay table (see {@link replayUnderLoad}). */
export function replayReport(result: { replay: ReplayRow[]; replayFollowers: number; replayEvents: number }): string[] {
  const { replay } = result;
  return [
    [
      `Full replay (one request, \`after=0&limit=10000\`) of a finished ${result.replayEvents}-event turn, p50 of 40 as the bench's process sees it, on the idle server and while ${result.replayFollowers} followers follow one live turn on it (target: within 2× of idle; the raw Node SSE server of the CPU rows, answering the replay from its events in memory, shows what the same load does to a server with no log at all).`,
      `*Idle*: after the catch-up measurement below, its live turn cancelled.`,
      `*Under ${result.replayFollowers} followers*: the followers in a process of their own, every one within ${CAUGHT_UP_EVENTS} events of the live turn's head before the timing starts; ${ROUNDS} such rounds, each on a live turn of its own (cancelled when the round ends) and between two idle measurements: the ratio is the median of the rounds' ratios, each its loaded p50 over the mean of the idle p50s just before and after it, so the machine's drift counts on both sides; the other columns show the first idle measurement and the median round.`,
      `*During catch-up* (the method before): the followers in the bench's own process, timed the moment the last one answered; reading their streams keeps that process's event loop busy, which delays the answers it times.`,
      `Where the time went (p50 of each part, read on the machine's monotonic clock, one for both processes): *to the listener* from the bench sending the request to the server's listener call (the client's own send, then the request waiting for the server's event loop); *in the server* from there to the answer's last byte handed to the socket; *to the bench* from there to the answer read in the bench's process; *slices*: the fan-out's slices (setImmediate calls) that ran while a replay was in the server; loop p99 and busy: the server's event-loop delay and utilisation while the replays ran.`,
      `*Behind*: how many events the furthest-behind follower was short of the live turn's head when the timing started and when it ended (more than ${CAUGHT_UP_EVENTS}: the server did not keep up with its followers, and the figure is for a server falling behind).`,
    ].join(' '),
    '',
    '| log | idle p50 ms | under load p50 ms | ratio | to the listener ms, idle → under load | in the server ms | to the bench ms | slices in the server, under load | server loop p99 ms / busy, under load | behind, start → end | during catch-up p50 ms (followers behind) | ratio |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...replay.map(({ log, baseline, idle, loaded, catchUp, ratios }) => {
      const ratio = median(ratios);
      const change = (of: (timing: ReplayTiming) => number): string => `${fixed(of(idle), 2)} → ${fixed(of(loaded), 2)}`;
      return `| ${log} | ${fixed(idle.p50, 2)} | ${fixed(loaded.p50, 2)} | ${fixed(ratio, 2)}× (${baseline ? 'no target' : verdict(ratio, 2)}; rounds ${ratios.map((value) => fixed(value, 2)).join(', ')}) | ${change((timing) => timing.waitP50)} | ${change((timing) => timing.serverP50)} | ${change((timing) => timing.deliverP50)} | ${fixed(loaded.slicesP50, 0)} | ${fixed(loaded.loopP99, 1)} / ${fixed(loaded.busy * 100, 0)} % | ${loaded.behind} → ${loaded.behindAfter ?? '?'} | ${fixed(catchUp.p50, 2)} (${catchUp.behind} events) | ${fixed(catchUp.p50 / idle.p50, 2)}× |`;
    }),
  ];
}
