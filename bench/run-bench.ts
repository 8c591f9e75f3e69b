/**
 * `npm run bench`: every benchmark in one run, each figure next to the baseline it was
 * measured against in that same run. Prints as it goes and writes docs/benchmarks.md.
 *
 * Options: `--only throughput,resume,stall,stall-defaults,hydration,memory,readers,size,scale,server,server-replay`, `--runs N`
 * (runs per throughput contender, default 7: the contenders swing ±20 % run to run, so one run's median and paired ratio need that many rounds), `--no-build` (use dist/ as it is),
 * `--scale-instances N` and `--scale-turns M` (the scale run's N server instances × M live
 * turns, default 3 × 60).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startBenchServer, type BenchServer } from './lib/bench-server.js';
import { chromiumVersion } from './lib/chromium.js';
import { benchDeliveryLatency, deliveryLatencyReport } from './delivery-latency.js';
import { benchMemory, memoryReport } from './memory.js';
import { benchOperatorListing, operatorListingReport } from './operator-listing.js';
import { benchPausedReaders, pausedReadersReport } from './paused-readers.js';
import { benchResume, resumeReport } from './resume.js';
import { benchScale, scaleReport } from './scale.js';
import { benchServerPath, serverPathReport } from './server-path.js';
import { benchStall, stallReport } from './stall.js';
import { benchStorage, storageReport } from './storage.bench.js';
import { benchThroughput, throughputReport } from './throughput.js';
import { measureBundleSizes, sizeTable } from '../scripts/size.mjs';

interface Section {
  id: string;
  title: string;
  /** Runs only when `--only` names it: a part of another section, for a quicker look at it alone. */
  named?: true;
  run(server: BenchServer, log: (line: string) => void): Promise<string>;
}

const root = fileURLToPath(new URL('..', import.meta.url));

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    runs: { type: 'string', default: '7' },
    'no-build': { type: 'boolean', default: false },
    'scale-instances': { type: 'string', default: '3' },
    'scale-turns': { type: 'string', default: '60' },
  },
});
const runs = Number(values.runs);

const SECTIONS: Section[] = [
  // First: it reads dist/ right after the build.
  {
    id: 'size',
    title: 'Bundle size (min+gz)',
    run: async () =>
      `esbuild bundle of the built entry with its runtime dependencies, minified, gzip level 9; 1 kB = 1024 bytes.\n\n${sizeTable(await measureBundleSizes())}`,
  },
  // Second: bench/storage.bench.ts bundles dist/ when it starts.
  {
    id: 'hydration',
    title: 'Reload hydration and IndexedDB writes (bench/storage.bench.ts)',
    run: async (_server, log) => {
      const body = storageReport(await benchStorage({ runs: 5, log }));
      return `Target: a 10 000-event turn hydrates on a cold page in ≤ 50 ms.\n\n${body}`;
    },
  },
  {
    id: 'throughput',
    title: 'Delivery throughput in headless Chromium',
    run: async (server, log) => throughputReport(await benchThroughput(server, { runs, log })),
  },
  {
    id: 'resume',
    title: 'Resume latency after a cut',
    run: async (server, log) => resumeReport(await benchResume(server, { log })),
  },
  {
    id: 'stall',
    title: 'Stall to recovered (replay path)',
    run: async (server, log) => stallReport(await benchStall(server, { log })),
  },
  {
    id: 'stall-defaults',
    title: 'Stall to recovered with default settings (watchdog sized from the announced heartbeat)',
    run: async (server, log) => stallReport(await benchStall(server, { log, defaults: true, rounds: 4 })),
  },
  {
    id: 'scale',
    title: 'Scale: server instances × live turns on one Redis and on Redis Cluster (bench/scale.ts)',
    run: async (_server, log) => {
      const options = {
        instances: Number(values['scale-instances']),
        turns: Number(values['scale-turns']),
        eventsPerTurn: 100,
        intervalMs: 25,
        submits: 300,
        submitConcurrency: 30,
      };
      return scaleReport(await benchScale({ ...options, log }), options);
    },
  },
  {
    id: 'server',
    title: "The server's fast path against raw SSE and raw Redis (bench/server-path.ts)",
    run: async (_server, log) => serverPathReport(await benchServerPath({ log })),
  },
  {
    id: 'server-replay',
    title: "The server's fast path: only the replay under 1 000 followers (bench/server-replay.ts)",
    named: true,
    run: async (_server, log) => serverPathReport(await benchServerPath({ log, replayOnly: true })),
  },
  {
    id: 'operator',
    title: 'Operator listing cost with 1 000 and 100 000 turns of other principals (bench/operator-listing.ts)',
    run: async (_server, log) => operatorListingReport(await benchOperatorListing({ log })),
  },
  {
    id: 'delivery',
    title: 'Delivery latency: turn.end to receipt in the example app (bench/delivery-latency.ts)',
    run: async (_server, log) => deliveryLatencyReport(await benchDeliveryLatency({ log })),
  },
  {
    id: 'memory',
    title: 'Memory held by a turn',
    run: async (server, log) => memoryReport(await benchMemory(server, { log })),
  },
  {
    id: 'readers',
    title: 'Server memory per paused reader (bench/paused-readers.ts)',
    run: async (_server, log) => pausedReadersReport(await benchPausedReaders({ log })),
  },
];

function machine(): string[] {
  const model = cpus()[0]?.model ?? 'unknown';
  return [
    `- date: ${new Date().toISOString()}`,
    `- CPUs (nproc): ${availableParallelism()}, model: ${model}`,
    `- Node ${process.version}, ${chromiumVersion()}`,
    `- load average at start: ${loadavg().map((load) => load.toFixed(2)).join(' ')}`,
  ];
}

async function main(): Promise<void> {
  const only = values.only?.split(',').map((id) => id.trim());
  const selected = SECTIONS.filter((section) => (only ? only.includes(section.id) : !section.named));
  const head = machine();
  console.log(['Lifeline benchmarks', ...head].join('\n'));
  if (!values['no-build']) {
    console.log('\nbuilding dist/ (npm run build)…');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  }
  const server = await startBenchServer();
  const bodies: string[] = [];
  try {
    for (const section of selected) {
      console.log(`\n## ${section.title}\n`);
      let body: string;
      try {
        body = await section.run(server, (line) => console.log(line));
      } catch (error) {
        body = `n/a (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
      }
      console.log(body);
      bodies.push(`## ${section.title}\n\n${body}`);
    }
  } finally {
    await server.close();
  }
  const doc = [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (scripts/bench.mjs → bench/). Every ratio compares figures measured in the same run.',
    'Numbers taken while other work runs on the machine are noisy; the load average below says how quiet it was.',
    '',
    ...head,
    '',
    ...bodies.flatMap((body) => [body, '']),
  ].join('\n');
  if (only) {
    console.log('\n(--only given: docs/benchmarks.md left unchanged)');
  } else {
    writeFileSync(new URL('../docs/benchmarks.md', import.meta.url), doc);
    console.log('\nwrote docs/benchmarks.md');
  }
}

await main();
