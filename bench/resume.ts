/**
 * Resume latency after a cut: the real client follows a long live turn through the
 * seeded fault proxy; the proxy resets the stream's socket every few hundred ms (only
 * while the stream is delivering). For each cut: time from the reset to the first
 * event applied from the new connection, next to the delay the client scheduled
 * (its configured backoff floor for a first retry: up to `firstRetryJitterMs`, default 20).
 */
import { isStreamRequest, startFaultProxy } from '../test/fixtures/fault-proxy.js';
import type { Agent } from '../src/server/producer/agent.js';
import type { BenchServer } from './lib/bench-server.js';
import { createPrng } from './lib/prng.js';
import { startReference } from './lib/reference.js';
import { fixed, median, quantile } from './lib/stats.js';
import type { TimelineConfig, TimelineResult } from './pages/follow-timeline.js';

export interface ResumeResult {
  cuts: { latencyMs: number; scheduledMs: number; detectMs: number }[];
  missed: number;
  status: string;
}

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

export async function benchResume(server: BenchServer, options: { cuts?: number; seed?: number; log?: (line: string) => void } = {}): Promise<ResumeResult> {
  const cuts = options.cuts ?? 40;
  const prng = createPrng(options.seed ?? 7);
  const producer = steadyAgent(2);
  const reference = startReference(producer.agent);
  const proxy = await startFaultProxy({ targetPort: server.port });
  const resets: number[] = [];
  try {
    const turnId = await reference.submit('bench-resume', 'resume benchmark');
    const config: TimelineConfig = { baseUrl: '/api', turnIds: [turnId] };
    let started!: () => void;
    const startedPromise = new Promise<void>((resolve) => (started = resolve));
    const running = server.runPage<TimelineResult>('follow-timeline', config, (req, res, path) => {
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
        if (proxy.resetWhere(isStreamRequest) > 0) resets.push(Date.now());
      }
      await pause(300);
      producer.stop();
    })();
    const [result] = await Promise.all([running, cutter]);
    const turn = result.turns[0]!;
    const measured: ResumeResult['cuts'] = [];
    let missed = 0;
    for (const reset of resets) {
      // The reconnect that follows the reset: its `open`, then the first event applied after it.
      const disconnect = result.diagnostics.find((d) => d.type === 'disconnect' && d.at >= reset - 2);
      const retry = result.diagnostics.find((d) => d.type === 'retry' && d.scope === 'stream' && d.at >= reset - 2);
      const open = result.diagnostics.find((d) => d.type === 'open' && d.at >= reset - 2);
      const first = open ? turn.applied.find(([at]) => at >= open.at) : undefined;
      if (!first || !retry || !disconnect) {
        missed++;
        continue;
      }
      measured.push({ latencyMs: first[0] - reset, scheduledMs: retry.delayMs ?? 0, detectMs: disconnect.at - reset });
    }
    options.log?.(`  resume: ${measured.length} cuts measured, median ${fixed(median(measured.map((c) => c.latencyMs)))} ms`);
    return { cuts: measured, missed, status: turn.status };
  } finally {
    producer.stop();
    await proxy.close();
    await reference.close();
  }
}

export function resumeReport(result: ResumeResult): string {
  const latency = result.cuts.map((c) => c.latencyMs);
  const scheduled = result.cuts.map((c) => c.scheduledMs);
  const beyond = result.cuts.map((c) => c.latencyMs - c.scheduledMs);
  const detect = result.cuts.map((c) => c.detectMs);
  const med = median(latency);
  return [
    `${result.cuts.length} socket resets of a live stream by the fault proxy (${result.missed} not measurable), client defaults ` +
      '(first reconnect after a healthy stream waits a random 0–20 ms, `retry.firstRetryJitterMs`); the turn ended ' +
      `\`${result.status}\`.`,
    '',
    '| ms | median | p95 |',
    '|---|---:|---:|',
    `| reset → next applied event | ${fixed(med)} | ${fixed(quantile(latency, 0.95))} |`,
    `| of which: reset → disconnect noticed | ${fixed(median(detect))} | ${fixed(quantile(detect, 0.95))} |`,
    `| delay the client scheduled (backoff floor) | ${fixed(median(scheduled))} | ${fixed(quantile(scheduled, 0.95))} |`,
    `| beyond the scheduled delay | ${fixed(median(beyond))} | ${fixed(quantile(beyond, 0.95))} |`,
    '',
    `**Resume median ${fixed(med)} ms** (target ≤ 20 ms: ${med <= 20 ? 'met' : 'NOT met'}); ` +
      `median ${fixed(median(beyond))} ms beyond the configured backoff.`,
  ].join('\n');
}
