// Reference: fetch reading the bytes and decoding UTF-8, no SSE parsing (the network floor).
import { runTimedRead } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runTimedRead<ThroughputConfig>(async (config) => {
  const response = await fetch(config.sseUrl, { headers: { accept: 'text/event-stream' } });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
  }
  if (length === 0) throw new Error('empty body');
  // Not parsed: the count is the turn's, so the rate compares with the parsing contenders.
  return config.events;
});
