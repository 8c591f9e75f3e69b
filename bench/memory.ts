/**
 * Memory: the JS heap a followed turn holds once complete and persisted, after garbage
 * collection, for turns of 1, 5 and 10 MB of text (64-character deltas), each in a fresh
 * Chromium with `--enable-precise-memory-info --js-flags=--expose-gc` (no DevTools).
 * Linear means the bytes held per text byte stay flat as the turn grows.
 */
import type { BenchServer } from './lib/bench-server.js';
import { fixed, int } from './lib/stats.js';
import { asciiTexts, makeTurn, pageConfig, renderSse, writeChunked } from './lib/turn-data.js';

const MB = 1024 * 1024;

export interface MemoryRow {
  megabytes: number;
  events: number;
  before?: number;
  after?: number;
  failure?: string;
}

export async function benchMemory(server: BenchServer, options: { sizes?: number[]; log?: (line: string) => void } = {}): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  for (const megabytes of options.sizes ?? [1, 5, 10]) {
    const turn = makeTurn(`benchMemoryTurn${megabytes}mb`.padEnd(21, '0'), asciiTexts(megabytes * MB, 64, megabytes));
    const body = renderSse(turn.events);
    const config = pageConfig(turn);
    const row: MemoryRow = { megabytes, events: turn.events.length };
    try {
      const figures = await server.runPage<{ before: number; after: number }>(
        'memory',
        config,
        (_req, res, path) => {
          if (path !== `/api/turns/${turn.turnId}/events`) return false;
          void writeChunked(res, body, 64 * 1024);
          return true;
        },
        { flags: ['--enable-precise-memory-info', '--js-flags=--expose-gc'], timeoutMs: 180_000 },
      );
      row.before = figures.before;
      row.after = figures.after;
      options.log?.(`  memory ${megabytes} MB: +${int((figures.after - figures.before) / 1024)} KiB`);
    } catch (error) {
      row.failure = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    }
    rows.push(row);
  }
  return rows;
}

export function memoryReport(rows: readonly MemoryRow[]): string {
  const lines = [
    'JS heap (`performance.memory.usedJSHeapSize` after forced GC) held by one completed, persisted turn; 1 MB = 2^20 bytes of ASCII text.',
    '',
    '| text | events | heap before | heap after | held | bytes per text byte |',
    '|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    if (row.failure !== undefined || row.before === undefined || row.after === undefined) {
      lines.push(`| ${row.megabytes} MB | ${int(row.events)} | n/a (${row.failure ?? 'no figures'}) | | | |`);
      continue;
    }
    const held = row.after - row.before;
    lines.push(
      `| ${row.megabytes} MB | ${int(row.events)} | ${fixed(row.before / MB)} MB | ${fixed(row.after / MB)} MB | ${fixed(held / MB)} MB | ${fixed(held / (row.megabytes * MB), 2)} |`,
    );
  }
  // Following any turn costs a fixed amount first (zod's compiled parsers, the stream and
  // storage machinery): the slope between the smallest and the largest turn is the cost per
  // character of text, which is what the target is about.
  const measured = rows.filter((row) => row.before !== undefined && row.after !== undefined);
  const [small, large] = [measured[0], measured.at(-1)];
  if (small && large && large.megabytes > small.megabytes) {
    const slope = (large.after! - large.before! - (small.after! - small.before!)) / ((large.megabytes - small.megabytes) * MB);
    const fixedCost = small.after! - small.before! - slope * small.megabytes * MB;
    lines.push(
      '',
      `**Heap per character of turn text: ${fixed(slope, 2)} bytes** (slope from ${small.megabytes} MB to ${large.megabytes} MB; target ≤ 1.2: ${slope <= 1.2 ? 'met' : 'not met'}), ` +
        `plus about ${fixed(fixedCost / MB, 2)} MB held by following any turn at all.`,
    );
  }
  return lines.join('\n');
}
