// Contender: the browser's own EventSource, JSON.parse of every event.
import { getConfig, runPage, startLagProbe, windowStats } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const stopLag = startLagProbe();
  const t0 = performance.now();
  let events = 0;
  await new Promise<void>((resolve, reject) => {
    const source = new EventSource(config.sseUrl);
    const onEvent = (message: MessageEvent<string>) => {
      JSON.parse(message.data);
      events++;
      if (message.type === 'turn.end') {
        source.close();
        resolve();
      }
    };
    for (const type of ['turn.start', 'delta', 'turn.end']) source.addEventListener(type, onEvent as EventListener);
    source.onerror = () => {
      source.close();
      reject(new Error(`EventSource error after ${events} events`));
    };
  });
  const t1 = performance.now();
  return { events, ms: t1 - t0, lag: stopLag(), ...windowStats(t0, t1) };
});
