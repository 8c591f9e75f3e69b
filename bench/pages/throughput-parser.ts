// Contender: fetch + eventsource-parser, the practical limit on this machine.
import { createParser } from 'eventsource-parser';
import { runTimedRead } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runTimedRead<ThroughputConfig>(async (config) => {
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
  if (!ended) throw new Error(`stream closed after ${events} events without turn.end`);
  return events;
});
