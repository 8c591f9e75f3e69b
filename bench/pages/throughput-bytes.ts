// Reference: fetch reading the bytes and decoding UTF-8, no SSE parsing (the network floor).
import { getConfig, runPage, startLagProbe, windowStats } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const stopLag = startLagProbe();
  const t0 = performance.now();
  const response = await fetch(config.sseUrl, { headers: { accept: 'text/event-stream' } });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
  }
  const t1 = performance.now();
  if (length === 0) throw new Error('empty body');
  return { events: config.events, ms: t1 - t0, lag: stopLag(), ...windowStats(t0, t1) };
});
