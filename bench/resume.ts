/**
 * Resume latency after a cut: the real client follows a long live turn through the
 * seeded fault proxy; the proxy resets the stream's socket every few hundred ms (only
 * while the stream is delivering). For each cut: time from the reset to the first
 * event applied from the new connection, next to the delay the client scheduled
 * (its configured backoff floor for a first retry: up to `firstRetryJitterMs`), and where
 * the rest went: noticing the cut, the retry timer, the request to the stream's headers,
 * the first event. The baseline, in the same run: a bare fetch loop through the same cuts
 * (bench/pages/resume-floor.ts), what this machine needs for any reconnect.
 */
import { isStreamRequest, startFaultProxy } from '../test/fixtures/fault-proxy.js';
import { DEFAULT_RETRY_POLICY } from '../src/core/backoff.js';
import type { Agent } from '../src/server/producer/agent.js';
import type { BenchServer } from './lib/bench-server.js';
import { createPrng } from './lib/prng.js';
import { startReference } from './lib/reference.js';
import { epochClock } from './lib/epoch-clock.js';
import { fixed, median, quantile } from './lib/stats.js';
import type { TimelineConfig, TimelineResult } from './pages/follow-timeline.js';

/** One measured cut of the client's stream, ms. */
export interface ResumeCut {
  /** Reset → the first event applied from the new connection. */
  latencyMs: number;
  /** The delay the client scheduled (its backoff). */
  scheduledMs: number;
  /** Reset → the client's `disconnect`. */
  detectMs: number;
  /** How late the retry timer fired: its `connect` after the scheduled delay. */
  lateMs: number;
  /** `connect` → `open`: the request, the server, the response's headers. */
  openMs: number;
  /** `open` → the first event applied. */
  firstMs: number;
}

export interface ResumeResult {
  cuts: ResumeCut[];
  missed: number;
  status: string;
  /** The baseline in the same run (bench/pages/resume-floor.ts): the same cuts on a bare fetch loop. */
  floor: { cuts: FloorCut[]; missed: number };
}

/** One cut of the bare fetch loop: the phases it shares with the client (it schedules no delay). */
export type FloorCut = Pick<ResumeCut, 'latencyMs' | 'detectMs' | 'openMs' | 'firstMs'>;

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A live turn: a small delta every `everyMs` until `stop()`. */
function steadyAgent(everyMs: number): { agent: Agent; stop(): void } {
  let stopped = false;
  return {
    stop: () => void (stopped = true),
    agent: async function* ({ signal }) {
      for (let i = 0; !stopped && !signal.aborted; i++) {
        await pause(everyMs);
        yield { type: 'delta', text: i % 10 === 9 ? ' 🙂' : ' word' };
      }
    },
  };
}

type Diagnostics = TimelineResult['diagnostics'];

/** How far the page's clock may run ahead of this process's (both anchored to Date.now's tick: bench/lib/epoch-clock.ts). */
const CLOCKS_APART_MS = 1;

/** The first diagnostic of `type` at or after `from`. */
const firstAfter = (diagnostics: Diagnostics, type: string, from: number): Diagnostics[number] | undefined =>
  diagnostics.find((d) => d.type === type && d.at >= from);

/** Follows one live turn in `page` while the proxy resets its stream `cuts` times; the page's timeline and the reset times. */
async function followThroughCuts(server: BenchServer, page: string, cuts: number, seed: number): Promise<{ result: TimelineResult; resets: number[] }> {
  const prng = createPrng(seed);
  const producer = steadyAgent(2);
  const reference = startReference(producer.agent);
  const proxy = await startFaultProxy({ targetPort: server.port });
  const now = epochClock();
  const resets: number[] = [];
  try {
    const turnId = await reference.submit('bench-resume', 'resume benchmark');
    const config: TimelineConfig = { baseUrl: '/api', turnIds: [turnId] };
    let started!: () => void;
    const startedPromise = new Promise<void>((resolve) => (started = resolve));
    const running = server.runPage<TimelineResult>(page, config, (req, res, path) => {
      if (!path.startsWith('/api/')) return false;
      reference.listener(req, res);
      return true;
    }, { origin: proxy.origin, onStarted: () => started(), timeoutMs: 120_000 });
    const cutter = (async () => {
      await startedPromise;
      while (resets.length < cuts) {
        // Cut only a stream that is delivering: a fresh connection has sent a few events.
        const live = [...proxy.connections].some((c) => c.request !== undefined && isStreamRequest(c.request) && c.bytesDown > 600);
        if (!live) {
          await pause(5);
          continue;
        }
        await pause(prng.int(100, 300));
        // Stamped before the reset: on a busy machine this process may lose the CPU right
        // after it, while the page notices the cut (a stamp taken after it came up to 4 ms late).
        const at = now();
        if (proxy.resetWhere(isStreamRequest) > 0) resets.push(at);
      }
      await pause(300);
      producer.stop();
    })();
    const [result] = await Promise.all([running, cutter]);
    return { result, resets };
  } finally {
    producer.stop();
    await proxy.close();
    await reference.close();
  }
}

export async function benchResume(server: BenchServer, options: { cuts?: number; seed?: number; log?: (line: string) => void } = {}): Promise<ResumeResult> {
  const cuts = options.cuts ?? 40;
  const seed = options.seed ?? 7;
  const { result, resets } = await followThroughCuts(server, 'follow-timeline', cuts, seed);
  const turn = result.turns[0]!;
  const measured: ResumeCut[] = [];
  let missed = 0;
  for (const reset of resets) {
    // What followed the reset, each found after the one before: the disconnect, its retry,
    // that retry's request (`connect`), its `open`, the first event applied after it.
    const disconnect = firstAfter(result.diagnostics, 'disconnect', reset - CLOCKS_APART_MS);
    const retry = disconnect && result.diagnostics.find((d) => d.type === 'retry' && d.scope === 'stream' && d.at >= disconnect.at);
    const connect = retry && firstAfter(result.diagnostics, 'connect', retry.at);
    const open = connect && firstAfter(result.diagnostics, 'open', connect.at);
    const first = open && turn.applied.find(([at]) => at >= open.at);
    if (!first || !retry || !disconnect || !connect || !open) {
      missed++;
      continue;
    }
    const scheduledMs = retry.delayMs ?? 0;
    measured.push({
      latencyMs: first[0] - reset,
      scheduledMs,
      detectMs: disconnect.at - reset,
      lateMs: connect.at - retry.at - scheduledMs,
      openMs: open.at - connect.at,
      firstMs: first[0] - open.at,
    });
  }
  options.log?.(`  resume: ${measured.length} cuts measured, median ${fixed(median(measured.map((c) => c.latencyMs)))} ms`);
  const floor = await benchFloor(server, cuts, seed);
  options.log?.(`  resume floor (bare fetch loop): median ${fixed(median(floor.cuts.map((c) => c.latencyMs)))} ms`);
  return { cuts: measured, missed, status: turn.status, floor };
}

/** The same cuts on a bare fetch loop (bench/pages/resume-floor.ts): its phases, as the client's, without backoff. */
async function benchFloor(server: BenchServer, cuts: number, seed: number): Promise<ResumeResult['floor']> {
  const { result, resets } = await followThroughCuts(server, 'resume-floor', cuts, seed);
  const applied = result.turns[0]!.applied;
  const measured: FloorCut[] = [];
  for (const reset of resets) {
    const disconnect = firstAfter(result.diagnostics, 'disconnect', reset - CLOCKS_APART_MS);
    const connect = disconnect && firstAfter(result.diagnostics, 'connect', disconnect.at);
    const open = connect && firstAfter(result.diagnostics, 'open', connect.at);
    const first = open && applied.find(([at]) => at >= open.at);
    if (first) measured.push({ latencyMs: first[0] - reset, detectMs: disconnect.at - reset, openMs: open.at - connect.at, firstMs: first[0] - open.at });
  }
  return { cuts: measured, missed: resets.length - measured.length };
}

export function resumeReport(result: ResumeResult): string {
  const stats = (values: number[]): string => `${fixed(median(values))} | ${fixed(quantile(values, 0.95))}`;
  const of = (key: keyof ResumeCut): number[] => result.cuts.map((c) => c[key]);
  const base = (key: keyof FloorCut): number[] => result.floor.cuts.map((c) => c[key]);
  const row = (label: string, client: number[], baseline?: number[]): string => `| ${label} | ${stats(client)} | ${baseline ? stats(baseline) : '– | –'} |`;
  const latency = of('latencyMs');
  const beyond = result.cuts.map((c) => c.latencyMs - c.scheduledMs);
  const med = median(latency);
  const floor = median(base('latencyMs'));
  const jitter = DEFAULT_RETRY_POLICY.firstRetryJitterMs;
  return [
    `${result.cuts.length} socket resets of a live stream by the fault proxy (${result.missed} not measurable), client defaults ` +
      `(first reconnect after a healthy stream waits a random 0–${jitter} ms, \`retry.firstRetryJitterMs\`); the turn ended ` +
      `\`${result.status}\`. Baseline in the same run: the same cuts on a bare fetch loop that reconnects at once and parses ` +
      `only \`id:\` lines (bench/pages/resume-floor.ts, ${result.floor.cuts.length} measured): what any reconnect costs on this machine.`,
    '',
    '| ms | client median | client p95 | bare fetch median | bare fetch p95 |',
    '|---|---:|---:|---:|---:|',
    row('reset → next applied event', latency, base('latencyMs')),
    row('of which: reset → disconnect noticed', of('detectMs'), base('detectMs')),
    row('delay the client scheduled (backoff floor)', of('scheduledMs')),
    row('retry timer late', of('lateMs')),
    row('request → stream open (request, server, headers)', of('openMs'), base('openMs')),
    row('open → first event applied', of('firstMs'), base('firstMs')),
    row('beyond the scheduled delay', beyond, base('latencyMs')),
    '',
    `**Resume median ${fixed(med)} ms** (target ≤ 20 ms: ${med <= 20 ? 'met' : 'NOT met'}); ` +
      `median ${fixed(median(beyond))} ms beyond the configured backoff, against ${fixed(floor)} ms for the bare fetch loop ` +
      `(${fixed(median(beyond) - floor)} ms of the client's own).`,
  ].join('\n');
}
