// Contender: raw @microsoft/fetch-event-source doing only JSON.parse.
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { getConfig, runPage, startLagProbe, windowStats } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const stopLag = startLagProbe();
  const t0 = performance.now();
  let events = 0;
  let ended = false;
  const controller = new AbortController();
  await fetchEventSource(config.sseUrl, {
    signal: controller.signal,
    openWhenHidden: true,
    onmessage(message) {
      // fetch-event-source also dispatches blocks without data (the leading `retry:`).
      if (message.data === '') return;
      JSON.parse(message.data);
      events++;
      if (message.event === 'turn.end') ended = true;
    },
    onerror(error: unknown) {
      throw error;
    },
  });
  const t1 = performance.now();
  if (!ended) throw new Error(`stream closed after ${events} events without turn.end`);
  return { events, ms: t1 - t0, lag: stopLag(), ...windowStats(t0, t1) };
});
