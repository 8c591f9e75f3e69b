// Memory: JS heap held by one followed turn, after garbage collection, per byte of its text.
import { createLifeline } from 'lifeline-chat';
import { getConfig, idbSettled, runPage, sha256Hex } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

interface MemoryInfo {
  usedJSHeapSize: number;
}

async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('no gc(): launch with --js-flags=--expose-gc');
  // Two collections with a task in between let finalizers and weak references settle.
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return (performance as Performance & { memory: MemoryInfo }).memory.usedJSHeapSize;
}

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const client = createLifeline({ baseUrl: config.baseUrl });
  await client.ready;
  const before = await settledHeap();
  const turn = client.turn(config.turnId);
  const final = await turn.completed;
  await idbSettled();
  if (final.status !== 'complete' || final.text.length !== config.textLength || (await sha256Hex(final.text)) !== config.textSha256) {
    throw new Error(`turn ended ${final.status} with ${final.text.length} of ${config.textLength} code units`);
  }
  const after = await settledHeap();
  // Keep the turn (and its text) reachable until after the measurement.
  const held = turn.getSnapshot().text.length;
  client.dispose();
  return { before, after, textLength: held };
});
