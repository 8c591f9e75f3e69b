// The resume benchmark's baseline: the same turn through the same cuts, followed by a bare
// fetch loop that reconnects at once with `Last-Event-ID` and parses nothing but `id:` lines
// (no backoff, no validation, no storage). Its reset → next event is what this machine's
// browser, proxy and server need for a reconnect; what the client takes beyond it is its own.
import { epochClock } from '../lib/epoch-clock.js';
import type { TimelineConfig, TimelineResult } from './follow-timeline.js';
import { getConfig, probe, runPage } from './probe.js';

/** Reads one connection; answers whether `turn.end` came. Applied seqs go to `applied`. */
async function readStream(response: Response, applied: [number, number][], now: () => number): Promise<boolean> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    buffer += value;
    for (let end; (end = buffer.indexOf('\n\n')) >= 0; ) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const seq = Number(/^id: (\d+)$/m.exec(block)?.[1] ?? 0);
      const last = applied.at(-1)?.[1] ?? 0;
      if (seq > last) applied.push([now(), seq]);
      if (/^event: turn\.end$/m.test(block)) return true;
    }
  }
}

runPage(async () => {
  const config = await getConfig<TimelineConfig>();
  const now = epochClock();
  const turnId = config.turnIds[0]!;
  const diagnostics: TimelineResult['diagnostics'] = [];
  const applied: [number, number][] = [];
  for (let ended = false; !ended; ) {
    const lastSeq = applied.at(-1)?.[1] ?? 0;
    diagnostics.push({ at: now(), type: 'connect' });
    try {
      const response = await fetch(`${config.baseUrl}/turns/${turnId}/events`, { headers: lastSeq ? { 'last-event-id': String(lastSeq) } : {} });
      diagnostics.push({ at: now(), type: 'open' });
      ended = response.status === 204 || (await readStream(response, applied, now));
    } catch {
      diagnostics.push({ at: now(), type: 'disconnect' });
    }
  }
  return { turns: [{ turnId, status: 'complete', applied, completedAt: now() }], diagnostics, errors: probe().errors } satisfies TimelineResult;
});
