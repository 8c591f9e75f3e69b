/**
 * Scale run: N server instances × M concurrent live turns on one Redis and on a
 * 3-master Redis Cluster. Each instance is a full reference server (handler, HTTP,
 * its own Redis turn log and connections) in this process; each turn is submitted to
 * one instance and followed over SSE on another, as behind a balancer. Measured:
 * submits/s (a burst of short turns), events/s delivered to followers, latency from the
 * agent yielding an event (it is appended at once) to the follower parsing it, and the
 * Redis side per event: commands (INFO commandstats) and server CPU (INFO cpu), summed
 * over the masters.
 */
import { createParser } from 'eventsource-parser';
import { Redis } from 'ioredis';
import { createLifelineHandler } from '../src/server/http/handler.js';
import { serve, type ServedHandler } from '../src/server/node/index.js';
import { createRedisTurnLog } from '../src/server/log/redis/index.js';
import type { TurnLog } from '../src/server/log/turn-log.js';
import { startRedisCluster } from '../test/fixtures/redis-cluster.js';
import { startRedisServer } from '../test/fixtures/redis.js';
import { fixed, int, quantile } from './lib/stats.js';

export interface ScaleOptions {
  instances: number;
  turns: number;
  eventsPerTurn: number;
  /** Pause between one turn's deltas, ms (the agent's token rate). */
  intervalMs: number;
  /** Short turns submitted in the submit burst, and how many at once. */
  submits: number;
  submitConcurrency: number;
  log: (line: string) => void;
}

export interface ScaleResult {
  store: string;
  masters: number;
  instances: number;
  turns: number;
  submitsPerSecond: number;
  eventsDelivered: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  commandsPerEvent: number;
  redisCpuUsPerEvent: number;
  /** CPU of this process (every instance, producers and followers) per event delivered. */
  serverCpuUsPerEvent: number;
  /** Redis commands per one-delta turn of the submit burst, its whole life (submit, create, three events, end). */
  commandsPerSubmit: number;
}

interface Topology {
  name: string;
  url: string;
  /** Ports of the masters, whose INFO is summed. */
  masters: number[];
  stop(): Promise<void>;
}

interface RedisCounters {
  calls: number;
  cpuSeconds: number;
}

async function counters(ports: number[]): Promise<RedisCounters> {
  let calls = 0;
  let cpuSeconds = 0;
  for (const port of ports) {
    const client = new Redis({ host: '127.0.0.1', port });
    try {
      const stats = await client.info('commandstats');
      // Our own INFO calls are excluded, so the reading does not count itself.
      for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (match[1] !== 'info') calls += Number(match[2]);
      const cpu = await client.info('cpu');
      for (const match of cpu.matchAll(/^used_cpu_(?:sys|user):([\d.]+)/gm)) cpuSeconds += Number(match[1]);
    } finally {
      client.disconnect();
    }
  }
  return { calls, cpuSeconds };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function startInstances(url: string, count: number, eventsPerTurn: number, intervalMs: number) {
  const logs: TurnLog[] = [];
  const servers: ServedHandler[] = [];
  for (let i = 0; i < count; i++) {
    const log = createRedisTurnLog({ url, keyPrefix: 'scale:' });
    logs.push(log);
    const handler = createLifelineHandler({
      store: log,
      basePath: '/api',
      maxLiveTurns: 100_000,
      // Each delta carries the moment it was yielded; the producer appends it right away.
      agent: async function* ({ content }) {
        const events = content === 'short' ? 1 : eventsPerTurn;
        for (let n = 0; n < events; n++) {
          if (n > 0) await sleep(intervalMs);
          yield { type: 'delta', text: `${performance.now().toFixed(3)} ` };
        }
      },
    });
    servers.push(await serve(handler));
  }
  return {
    bases: servers.map((server) => `${server.url}/api`),
    async close() {
      for (const server of servers) await server.close();
      for (const log of logs) await log.close();
    },
  };
}

let keys = 0;
async function submit(base: string, content: string): Promise<string> {
  keys++;
  const response = await fetch(`${base}/conversations/conv-${keys % 97}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `scale-key-${keys}-${Date.now()}` },
    body: JSON.stringify({ content }),
  });
  if (response.status !== 202) throw new Error(`submit answered ${response.status}`);
  return ((await response.json()) as { turnId: string }).turnId;
}

/** Follows a turn to its end; records each delta's latency. */
async function follow(base: string, turnId: string, latencies: number[]): Promise<number> {
  let events = 0;
  let ended = false;
  const response = await fetch(`${base}/turns/${turnId}/events`, { headers: { accept: 'text/event-stream' } });
  const parser = createParser({
    onEvent(message) {
      if (message.id === undefined) return;
      events++;
      if (message.event === 'delta') {
        const sent = Number.parseFloat((JSON.parse(message.data) as { text: string }).text);
        latencies.push(performance.now() - sent);
      } else if (message.event === 'turn.end') ended = true;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  if (!ended) throw new Error(`turn ${turnId} was not followed to its end`);
  return events;
}

/** Runs `count` tasks, `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

async function runOn(topology: Topology, options: ScaleOptions): Promise<ScaleResult> {
  const { instances, turns, eventsPerTurn, intervalMs, submits, submitConcurrency, log } = options;
  const cluster = await startInstances(topology.url, instances, eventsPerTurn, intervalMs);
  try {
    const { bases } = cluster;
    // Warm-up: scripts loaded, connections and subscriptions open on every instance.
    await Promise.all(bases.map(async (base, i) => follow(bases[(i + 1) % bases.length] as string, await submit(base, 'short'), [])));

    const beforeSubmits = await counters(topology.masters);
    const submitStart = performance.now();
    await pool(submits, submitConcurrency, async (i) => void (await submit(bases[i % bases.length] as string, 'short')));
    const submitsPerSecond = submits / ((performance.now() - submitStart) / 1000);
    const afterSubmits = await counters(topology.masters);
    log(`  ${topology.name}: ${int(submitsPerSecond)} submits/s`);

    const latencies: number[] = [];
    const before = await counters(topology.masters);
    const cpuBefore = process.cpuUsage();
    const start = performance.now();
    const delivered = await Promise.all(
      Array.from({ length: turns }, async (_, i) => {
        const turnId = await submit(bases[i % bases.length] as string, 'long');
        return follow(bases[(i + 1) % bases.length] as string, turnId, latencies);
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const after = await counters(topology.masters);
    const events = delivered.reduce((sum, count) => sum + count, 0);
    const result: ScaleResult = {
      store: topology.name,
      masters: topology.masters.length,
      instances,
      turns,
      submitsPerSecond,
      eventsDelivered: events,
      eventsPerSecond: events / seconds,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      commandsPerEvent: (after.calls - before.calls) / events,
      redisCpuUsPerEvent: ((after.cpuSeconds - before.cpuSeconds) * 1e6) / events,
      serverCpuUsPerEvent: (cpu.user + cpu.system) / events,
      commandsPerSubmit: (afterSubmits.calls - beforeSubmits.calls) / submits,
    };
    log(`  ${topology.name}: ${int(result.eventsPerSecond)} events/s, p50 ${fixed(result.p50Ms)} ms, p99 ${fixed(result.p99Ms)} ms, ${fixed(result.commandsPerEvent)} commands/event`);
    return result;
  } finally {
    await cluster.close();
  }
}

export async function benchScale(options: ScaleOptions): Promise<ScaleResult[]> {
  const results: ScaleResult[] = [];
  const single = await startRedisServer();
  try {
    results.push(await runOn({ name: 'one Redis', url: single.url, masters: [single.port], stop: single.stop }, options));
  } finally {
    await single.stop();
  }
  const cluster = await startRedisCluster({ masters: 3 });
  try {
    const masters = cluster.nodes.filter((node) => node.role === 'master').map((node) => node.port);
    results.push(await runOn({ name: 'Redis Cluster, 3 masters', url: cluster.url, masters, stop: cluster.stop }, options));
  } finally {
    await cluster.stop();
  }
  return results;
}

/** Share of one core a Redis master may spend on Lifeline in the projection: headroom for spikes, failover and replication. */
const REDIS_CPU_BUDGET = 0.5;

/** Concurrent turns `masters` Redis masters carry at `eventsPerTurnPerSecond`, from the measured CPU per event. */
function turnsCarried(masters: number, cpuUsPerEvent: number, eventsPerTurnPerSecond: number): number {
  return (masters * REDIS_CPU_BUDGET * 1e6) / (cpuUsPerEvent * eventsPerTurnPerSecond);
}

function projection(results: ScaleResult[], eventsPerTurnPerSecond: number): string[] {
  const single = results.find((r) => r.masters === 1);
  const cluster = results.find((r) => r.masters > 1);
  if (!single || !cluster) return [];
  const sizes = [3, 6, 12, 24];
  return [
    '',
    `Projection from these figures: the Redis side scales with its busiest thread, one per master. Giving Lifeline ${REDIS_CPU_BUDGET * 100} % of one core per master and turns streaming ${fixed(eventsPerTurnPerSecond, 0)} events/s each (the agent rate above), one Redis carries about **${int(turnsCarried(1, single.redisCpuUsPerEvent, eventsPerTurnPerSecond))} concurrent turns** (${fixed(single.redisCpuUsPerEvent)} µs per event). On a cluster a turn's keys sit in one slot and every per-event step stays in that slot, so capacity grows with the masters at the cluster's measured ${fixed(cluster.redisCpuUsPerEvent)} µs per event:`,
    '',
    `| masters | ${sizes.map(String).join(' | ')} |`,
    `|---|${sizes.map(() => '---:').join('|')}|`,
    `| concurrent turns | ${sizes.map((k) => int(turnsCarried(k, cluster.redisCpuUsPerEvent, eventsPerTurnPerSecond))).join(' | ')} |`,
    '',
    `The server instances need about ${fixed(cluster.serverCpuUsPerEvent, 0)} µs of Node CPU per event delivered (producing, appending, waking and sending it), i.e. one core per ~${int(turnsCarried(1, cluster.serverCpuUsPerEvent, eventsPerTurnPerSecond) / REDIS_CPU_BUDGET)} turns at that rate. A submit costs ~${fixed(cluster.commandsPerSubmit, 0)} commands over its turn's whole life, next to ~${fixed(cluster.commandsPerEvent, 1)} per event, so long turns are dominated by their events. Redis CPU measured on a shared, busy machine overstates a dedicated core's cost; the figures are an order of magnitude, to be re-measured on the target hardware with this same run.`,
  ];
}

export function scaleReport(results: ScaleResult[], options: Omit<ScaleOptions, 'log'>): string {
  const rows = results.map(
    (r) =>
      `| ${r.store} | ${r.instances} × ${r.turns} | ${int(r.submitsPerSecond)} | ${int(r.eventsPerSecond)} | ${fixed(r.p50Ms)} | ${fixed(r.p99Ms)} | ${fixed(r.commandsPerEvent)} | ${fixed(r.redisCpuUsPerEvent)} | ${fixed(r.serverCpuUsPerEvent, 0)} | ${fixed(r.commandsPerSubmit)} |`,
  );
  return [
    `${options.instances} server instances in one process; ${options.turns} live turns of ${options.eventsPerTurn} deltas, one every ${options.intervalMs} ms (${fixed((options.turns * 1000) / options.intervalMs, 0)} events/s offered), each submitted to one instance and followed over SSE on the next; submits: a burst of ${options.submits} one-delta turns, ${options.submitConcurrency} at a time. Latency: agent yield (append) → follower parsed it. Redis figures are INFO deltas (commandstats calls, used_cpu_sys+user) summed over the masters during the live phase, divided by events delivered; server CPU is this process's.`,
    '',
    '| store | instances × live turns | submits/s | events/s delivered | p50 ms | p99 ms | Redis commands / event | Redis CPU µs / event | server CPU µs / event | commands / one-delta turn |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    ...projection(results, 1000 / options.intervalMs),
  ].join('\n');
}
