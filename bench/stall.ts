/**
 * Stall to recovered, replay path: turns the server already finished are followed
 * through the fault proxy, which black-holes each turn's first stream after a random
 * number of bytes (socket kept open, nothing passes). The client's idle watchdog
 * (shortened here) must notice and replay the rest. Reported: time from the last event
 * before the stall to the turn's completion, and how much of it lies beyond the timeout.
 */
import { isStreamRequest, startFaultProxy } from '../test/fixtures/fault-proxy.js';
import type { Agent } from '../src/server/producer/agent.js';
import type { BenchServer } from './lib/bench-server.js';
import { createPrng } from './lib/prng.js';
import { startReference } from './lib/reference.js';
import { fixed, median, quantile } from './lib/stats.js';
import { HEARTBEAT_FACTOR, MIN_STALL_MS } from '../src/core/follow-state.js';
import { DEFAULT_HEARTBEAT_MS } from '../src/server/http/handler.js';
import type { TimelineConfig, TimelineResult } from './pages/follow-timeline.js';

const IDLE_MS = 1000;

export interface StallResult {
  /** The app's `stall.idleMs`, or `undefined`: defaults (sized from the announced heartbeat). */
  idleMs: number | undefined;
  /** The `Lifeline-Heartbeat` the server announced, ms (defaults only). */
  heartbeatMs?: number | undefined;
  rounds: { totalMs: number; detectMs: number; replayMs: number }[];
  failures: string[];
}

/** 300 deltas, no pause: the turn is over long before anyone follows it. */
const finishedAgent: Agent = async function* () {
  for (let i = 0; i < 300; i++) yield { type: 'delta', text: i % 7 === 0 ? ' 漢字' : ' text' };
};

/**
 * `defaults`: neither the app nor the bench sets a watchdog, and the server keeps its own
 * heartbeat: the client sizes its watchdog from the announced `Lifeline-Heartbeat` (the
 * seed's "pending assistant response", caught with defaults).
 */
export async function benchStall(server: BenchServer, options: { rounds?: number; seed?: number; defaults?: boolean; log?: (line: string) => void } = {}): Promise<StallResult> {
  const rounds = options.rounds ?? 10;
  const prng = createPrng(options.seed ?? 11);
  const idleMs = options.defaults ? undefined : IDLE_MS;
  const reference = startReference(finishedAgent, options.defaults ? { heartbeatMs: 'default' } : {});
  const stalled = new Set<string>();
  const proxy = await startFaultProxy({
    targetPort: server.port,
    plan: (request) => {
      const turnId = /\/turns\/([^/?]+)\/events/.exec(request.path)?.[1];
      if (!isStreamRequest(request) || turnId === undefined || stalled.has(turnId)) return { kind: 'pass' };
      stalled.add(turnId);
      return { kind: 'stall', afterBytes: prng.int(400, 6000) };
    },
  });
  try {
    const turnIds: string[] = [];
    for (let i = 0; i < rounds; i++) turnIds.push(await reference.submit('bench-stall', `stall ${i}`));
    const config: TimelineConfig = { baseUrl: '/api', turnIds, ...(idleMs !== undefined && { idleMs, firstEventMs: idleMs }) };
    const result = await server.runPage<TimelineResult>(
      'follow-timeline',
      config,
      (req, res, path) => {
        if (!path.startsWith('/api/')) return false;
        reference.listener(req, res);
        return true;
      },
      { origin: proxy.origin, timeoutMs: 120_000 },
    );
    const measured: StallResult['rounds'] = [];
    const failures: string[] = [];
    for (const turn of result.turns) {
      const stall = result.diagnostics.find((d) => d.type === 'stalled' && d.turnId === turn.turnId);
      if (turn.status !== 'complete' || !stall) {
        failures.push(`${turn.turnId}: ${turn.status}${stall ? '' : ', no stall noticed'}`);
        continue;
      }
      // The last event before the watchdog fired; with none, the watchdog counted from the connection.
      const before = turn.applied.filter(([at]) => at <= stall.at).at(-1)?.[0];
      const connected = result.diagnostics.find((d) => d.type === 'open' && d.turnId === turn.turnId)?.at;
      const silentFrom = before ?? connected ?? stall.at;
      measured.push({
        totalMs: turn.completedAt - silentFrom,
        detectMs: stall.at - silentFrom,
        replayMs: turn.completedAt - stall.at,
      });
    }
    options.log?.(`  stall: ${measured.length} rounds, median ${fixed(median(measured.map((r) => r.totalMs)))} ms`);
    return { idleMs, heartbeatMs: options.defaults ? DEFAULT_HEARTBEAT_MS : undefined, rounds: measured, failures };
  } finally {
    await proxy.close();
    await reference.close();
  }
}

export function stallReport(result: StallResult): string {
  const timeout = result.idleMs ?? Math.max(MIN_STALL_MS, HEARTBEAT_FACTOR * (result.heartbeatMs ?? 0));
  const beyond = result.rounds.map((r) => r.totalMs - timeout);
  const detect = result.rounds.map((r) => r.detectMs - timeout);
  const replay = result.rounds.map((r) => r.replayMs);
  const setting =
    result.idleMs === undefined
      ? `default settings: the server announced \`Lifeline-Heartbeat: ${result.heartbeatMs}\`, so the client's watchdog is ${timeout} ms`
      : `stall timeout \`stall.idleMs\` = ${result.idleMs} ms`;
  return [
    `${result.rounds.length} finished turns whose stream was black-holed part way; ${setting}` +
      `${result.failures.length ? `; failures: ${result.failures.join('; ')}` : ''}.`,
    '',
    '| ms | median | p95 |',
    '|---|---:|---:|',
    `| last event → turn complete (replay) | ${fixed(median(result.rounds.map((r) => r.totalMs)))} | ${fixed(quantile(result.rounds.map((r) => r.totalMs), 0.95))} |`,
    `| **beyond the stall timeout** | **${fixed(median(beyond))}** | **${fixed(quantile(beyond, 0.95))}** |`,
    `| of which: watchdog late vs the timeout | ${fixed(median(detect))} | ${fixed(quantile(detect, 0.95))} |`,
    `| of which: stalled → complete (replay) | ${fixed(median(replay))} | ${fixed(quantile(replay, 0.95))} |`,
  ].join('\n');
}
