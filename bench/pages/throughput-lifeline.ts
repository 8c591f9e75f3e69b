// Contender: Lifeline as an app uses it: createLifeline (zod validation, IndexedDB
// persistence), following the turn to completion, its text verified afterwards.
import { createLifeline } from 'lifeline-chat';
import { getConfig, idbSettled, probe, runPage, sha256Hex, startLagProbe, windowStats } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const client = createLifeline({
    baseUrl: config.baseUrl,
    ...(config.flushMs !== undefined ? { flushMs: config.flushMs } : {}),
    ...(config.flushEvents !== undefined ? { flushEvents: config.flushEvents } : {}),
  });
  // Opening the database is start-up work, not delivery: wait for it before the clock starts.
  await client.ready;
  const diagnostics: string[] = [];
  client.diagnostics.subscribe((diagnostic) => {
    if (diagnostic.type !== 'connect' && diagnostic.type !== 'open' && diagnostic.type !== 'completed') {
      diagnostics.push(diagnostic.type);
    }
  });
  const stopLag = startLagProbe();
  const t0 = performance.now();
  const turn = client.turn(config.turnId);
  const final = await turn.completed;
  const t1 = performance.now();
  const lag = stopLag();
  const durableAt = Math.max(t1, await idbSettled());
  // Until every write is durable: persistence may still be writing after the last event.
  const stats = windowStats(t0, durableAt);
  const sha = await sha256Hex(final.text);
  if (final.status !== 'complete') throw new Error(`turn ended ${final.status}: ${final.error?.message ?? ''}`);
  if (final.text.length !== config.textLength || sha !== config.textSha256) {
    throw new Error(`text differs from the server's: ${final.text.length} vs ${config.textLength} code units`);
  }
  if (final.lastSeq !== config.events) throw new Error(`lastSeq ${final.lastSeq}, expected ${config.events}`);
  const storage = client.storageStatus.getSnapshot();
  client.dispose();
  return {
    events: final.lastSeq,
    ms: t1 - t0,
    durableMs: durableAt - t0,
    lag,
    ...stats,
    txByMode: probe().txByMode,
    storage: storage.state,
    diagnostics,
    errors: probe().errors,
  };
});
