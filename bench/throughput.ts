/**
 * Delivery throughput: one turn of 100 000 small deltas, pre-rendered once as an SSE
 * body and written in 64 KiB chunks, read by each contender in a fresh headless
 * Chromium with no DevTools session. Runs are interleaved (contender A, B, C, D, then
 * again) so machine noise spreads over all of them; the median of the runs is kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BenchServer } from './lib/bench-server.js';
import { fixed, int, median, medianRun } from './lib/stats.js';
import { deltaTexts, makeTurn, pageConfig, renderSse, writeChunked, type BenchTurn } from './lib/turn-data.js';

export const CHUNK_BYTES = 64 * 1024;

export interface PageFigures {
  events: number;
  ms: number;
  durableMs?: number;
  lag: { samples: number; maxMs: number; p99Ms: number; meanMs: number };
  longTasks: number;
  longTaskMaxMs: number;
  longTaskTotalMs: number;
  readwriteTx: number;
  diagnostics?: string[];
  errors?: string[];
  storage?: string;
}

export interface ContenderResult {
  name: string;
  page: string;
  runs: PageFigures[];
  failure?: string;
  /** Median events/s over the runs. */
  eventsPerSecond: number;
  /** The run with the median rate (its long tasks, lag, transactions are reported). */
  medianRun?: PageFigures;
}

export interface ThroughputResult {
  deltas: number;
  bodyBytes: number;
  contenders: ContenderResult[];
  /** Lifeline at a limited producer rate, to show transactions/s do not follow the event rate. */
  paced?: { targetEventsPerSecond: number; figures?: PageFigures; failure?: string };
  /** Requests Lifeline made besides the one stream (there should be none). */
  extraRequests: string[];
}

/** Serves the turn as `/sse` (baselines) and behind the protocol's stream path (Lifeline). */
function turnRoutes(turn: BenchTurn, body: Buffer, extra: string[], paceMs = 0, chunkBytes = CHUNK_BYTES) {
  const streamPath = `/api/turns/${turn.turnId}/events`;
  return (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    const fresh = req.headers['last-event-id'] === undefined && !(req.url ?? '').includes('after=');
    if (path === '/sse' || (path === streamPath && fresh)) {
      void writeChunked(res, body, chunkBytes, paceMs);
      return true;
    }
    if (path === `/api/turns/${turn.turnId}/delivered` && req.method === 'POST') {
      answerReceipt(req, res, turn, extra);
      return true;
    }
    if (path.startsWith('/api/')) {
      // Anything else means the client needed recovery on a clean stream: worth reporting.
      extra.push(`${req.method ?? 'GET'} ${req.url ?? ''}`);
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: { code: 'overloaded', message: 'bench serves only the first stream' } }));
      return true;
    }
    return false;
  };
}

/**
 * The delivery receipt Lifeline posts once per ended turn (docs/protocol.md section 10),
 * answered as the reference server would: recorded when seq and hash match the turn's end,
 * otherwise refused, and the refusal reported as an unexpected request.
 */
function answerReceipt(req: IncomingMessage, res: ServerResponse, turn: BenchTurn, extra: string[]): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const end = turn.events[turn.events.length - 1]!;
    let receipt: { seq?: unknown; textSha256?: unknown } = {};
    try {
      receipt = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof receipt;
    } catch {
      // Malformed: answered below as an invalid receipt.
    }
    const json = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (receipt.seq !== end.seq || receipt.textSha256 !== turn.textSha256) {
      extra.push(`POST ${req.url ?? ''} (receipt refused: ${JSON.stringify(receipt)})`);
      json(400, { error: { code: 'invalid_receipt', message: 'seq or textSha256 differs from the turn end' } });
      return;
    }
    const now = new Date().toISOString();
    json(200, {
      turn: {
        id: turn.turnId,
        messageId: turn.messageId,
        conversationId: turn.conversationId,
        status: 'complete',
        lastSeq: end.seq,
        createdAt: now,
        updatedAt: now,
        delivery: { state: 'delivered', at: now },
      },
    });
  });
}

const CONTENDERS = [
  { name: 'fetch, bytes only (no SSE parsing; network floor)', page: 'throughput-bytes' },
  { name: 'native EventSource', page: 'throughput-native' },
  { name: '@microsoft/fetch-event-source (JSON.parse only)', page: 'throughput-fes' },
  { name: 'fetch + eventsource-parser', page: 'throughput-parser' },
  { name: 'Lifeline (zod + IndexedDB)', page: 'throughput-lifeline' },
] as const;

export async function benchThroughput(
  server: BenchServer,
  options: { deltas?: number; runs?: number; log?: (line: string) => void } = {},
): Promise<ThroughputResult> {
  const deltas = options.deltas ?? 100_000;
  const runs = options.runs ?? 3;
  const log = options.log ?? (() => {});
  const turn = makeTurn('benchThroughputTurn000', deltaTexts(deltas, 1));
  const body = renderSse(turn.events);
  const extra: string[] = [];
  const config = pageConfig(turn);
  const results = new Map<string, { runs: PageFigures[]; failure?: string }>(CONTENDERS.map((c) => [c.page, { runs: [] }]));
  for (let run = 1; run <= runs; run++) {
    for (const contender of CONTENDERS) {
      const entry = results.get(contender.page)!;
      if (entry.failure !== undefined) continue;
      try {
        const figures = await server.runPage<PageFigures>(contender.page, config, turnRoutes(turn, body, extra), { timeoutMs: 90_000 });
        entry.runs.push(figures);
        log(`  throughput ${contender.name} run ${run}: ${int((figures.events / figures.ms) * 1000)} events/s`);
      } catch (error) {
        entry.failure = error instanceof Error ? error.message.split('\n')[0]! : String(error);
        log(`  throughput ${contender.name}: n/a (${entry.failure})`);
      }
    }
  }
  const contenders: ContenderResult[] = CONTENDERS.map((contender) => {
    const entry = results.get(contender.page)!;
    const rate = (figures: PageFigures) => (figures.events / figures.ms) * 1000;
    return {
      ...contender,
      runs: entry.runs,
      ...(entry.failure !== undefined ? { failure: entry.failure } : {}),
      eventsPerSecond: entry.failure === undefined ? median(entry.runs.map(rate)) : Number.NaN,
      ...(entry.failure === undefined && entry.runs.length > 0 ? { medianRun: medianRun(entry.runs, rate) } : {}),
    };
  });

  // A rate-limited producer: about 10 000 events/s (100 events every 10 ms).
  let paced: ThroughputResult['paced'];
  const lifeline = results.get('throughput-lifeline')!;
  if (lifeline.failure === undefined) {
    const pacedTurn = makeTurn('benchPacedTurn0000000', deltaTexts(20_000, 2));
    const pacedBody = renderSse(pacedTurn.events);
    const bytesPerEvent = pacedBody.length / pacedTurn.events.length;
    const pacedConfig = pageConfig(pacedTurn);
    try {
      const figures = await server.runPage<PageFigures>(
        'throughput-lifeline',
        pacedConfig,
        turnRoutes(pacedTurn, pacedBody, extra, 10, Math.round(bytesPerEvent * 100)),
        { timeoutMs: 90_000 },
      );
      paced = { targetEventsPerSecond: 10_000, figures };
      log(`  throughput Lifeline paced: ${int((figures.events / figures.ms) * 1000)} events/s, ${figures.readwriteTx} tx`);
    } catch (error) {
      paced = { targetEventsPerSecond: 10_000, failure: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
    }
  }
  return { deltas, bodyBytes: body.length, contenders, ...(paced ? { paced } : {}), extraRequests: extra };
}

/** Markdown section for docs/benchmarks.md (also printed). */
export function throughputReport(result: ThroughputResult): string {
  const byPage = new Map(result.contenders.map((c) => [c.page, c]));
  const fes = byPage.get('throughput-fes');
  const lifeline = byPage.get('throughput-lifeline');
  const lines = [
    `One turn of ${int(result.deltas)} deltas (${int(result.bodyBytes)} bytes of SSE), written in 64 KiB chunks; ` +
      `median of ${Math.max(...result.contenders.map((c) => c.runs.length))} runs, each in a fresh Chromium without DevTools.`,
    '',
    '| contender | events/s (median) | runs | long tasks > 50 ms | max lag ms | vs fetch-event-source |',
    '|---|---:|---|---:|---:|---:|',
  ];
  for (const c of result.contenders) {
    if (c.failure !== undefined) {
      lines.push(`| ${c.name} | n/a (${c.failure}) | | | | |`);
      continue;
    }
    const rates = c.runs.map((run) => int((run.events / run.ms) * 1000)).join(', ');
    const ratio = fes && fes.failure === undefined ? fixed(c.eventsPerSecond / fes.eventsPerSecond, 2) : 'n/a';
    const m = c.medianRun;
    lines.push(`| ${c.name} | ${int(c.eventsPerSecond)} | ${rates} | ${m ? m.longTasks : ''} | ${m ? fixed(m.lag.maxMs) : ''} | ${ratio} |`);
  }
  lines.push('');
  if (lifeline && lifeline.failure === undefined && fes && fes.failure === undefined) {
    const ratio = lifeline.eventsPerSecond / fes.eventsPerSecond;
    lines.push(`**Lifeline / raw fetch-event-source = ${fixed(ratio, 2)}** (target ≥ 0.95: ${ratio >= 0.95 ? 'met' : 'NOT met'})`);
  } else {
    lines.push(`**Lifeline / raw fetch-event-source = n/a** (${lifeline?.failure ?? fes?.failure ?? 'missing'})`);
  }
  if (lifeline?.failure === undefined && fes?.failure === undefined && lifeline && fes) {
    // Runs of one round are seconds apart: their ratio cancels most of the machine's drift.
    const paired = lifeline.runs.map((run, i) => {
      const other = fes.runs[i];
      return other ? run.events / run.ms / (other.events / other.ms) : Number.NaN;
    });
    lines.push(`Paired per round (Lifeline run i / fetch-event-source run i): ${paired.map((r) => fixed(r, 2)).join(', ')}; median ${fixed(median(paired), 2)}.`);
  }
  const m = lifeline?.medianRun;
  if (m) {
    const seconds = (m.durableMs ?? m.ms) / 1000;
    lines.push(
      '',
      'During the median Lifeline run, from the first request until every IndexedDB write was durable ' +
        `(${fixed((m.durableMs ?? m.ms) - m.ms, 0)} ms after the last event):`,
      `- long tasks > 50 ms: ${m.longTasks} (longest ${fixed(m.longTaskMaxMs)} ms, ${fixed(m.longTaskTotalMs)} ms in total)`,
      `- event-loop lag (a 10 ms timer, ${m.lag.samples} firings in ${fixed(m.ms / 1000, 2)} s of delivery): mean ${fixed(m.lag.meanMs)} ms, ` +
        `p99 ${fixed(m.lag.p99Ms)} ms, max ${fixed(m.lag.maxMs)} ms`,
      `- IndexedDB read-write transactions: ${m.readwriteTx} → ${fixed(m.readwriteTx / seconds, 0)} tx/s, ` +
        `${fixed(m.events / Math.max(1, m.readwriteTx), 0)} events per transaction`,
    );
  }
  const p = result.paced;
  if (p?.figures) {
    const f = p.figures;
    const seconds = (f.durableMs ?? f.ms) / 1000;
    lines.push(
      `- at a producer limited to ~${int(p.targetEventsPerSecond)} events/s (${int(f.events)} events, ` +
        `${int((f.events / f.ms) * 1000)} events/s delivered): ${f.readwriteTx} transactions → ` +
        `${fixed(f.readwriteTx / seconds, 0)} tx/s, ${fixed(f.events / Math.max(1, f.readwriteTx), 0)} events per transaction`,
    );
    if (m) {
      const fullRate = m.events / m.ms;
      const fullTx = m.readwriteTx / (m.durableMs ?? m.ms);
      const pacedTx = f.readwriteTx / (f.durableMs ?? f.ms);
      lines.push(
        `- so: ${fixed(fullRate / (f.events / f.ms), 1)}× the event rate took ${fixed(fullTx / pacedTx, 2)}× the transactions per second ` +
          `(transactions must not grow with the rate)`,
      );
    }
  } else if (p?.failure) {
    lines.push(`- paced run: n/a (${p.failure})`);
  }
  if (result.extraRequests.length > 0) {
    lines.push('', `Lifeline made requests besides its one stream: ${result.extraRequests.slice(0, 5).join('; ')}`);
  }
  return lines.join('\n');
}
