// Contender: fetch + eventsource-parser, the practical limit on this machine.
import { createParser } from 'eventsource-parser';
import { getConfig, runPage, startLagProbe, windowStats } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runPage(async () => {
  const config = await getConfig<ThroughputConfig>();
  const stopLag = startLagProbe();
  const t0 = performance.now();
  let events = 0;
  let ended = false;
  const parser = createParser({
    onEvent(message) {
      JSON.parse(message.data);
      events++;
      if (message.event === 'turn.end') ended = true;
    },
  });
  const response = await fetch(config.sseUrl, { headers: { accept: 'text/event-stream' } });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
  const t1 = performance.now();
  if (!ended) throw new Error(`stream closed after ${events} events without turn.end`);
  return { events, ms: t1 - t0, lag: stopLag(), ...windowStats(t0, t1) };
});
