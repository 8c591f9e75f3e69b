// Contender: the browser's own EventSource, JSON.parse of every event.
import { runTimedRead } from './probe.js';
import type { ThroughputConfig } from './throughput-types.js';

runTimedRead<ThroughputConfig>(async (config) => {
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
  return events;
});
