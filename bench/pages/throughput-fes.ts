// Contender: raw @microsoft/fetch-event-source doing only JSON.parse.
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { runTimedRead } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runTimedRead<ThroughputConfig>(async (config) => {
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
  if (!ended) throw new Error(`stream closed after ${events} events without turn.end`);
  return events;
});
