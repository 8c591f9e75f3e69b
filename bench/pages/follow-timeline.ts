// Resume and stall benchmarks: follows turns with the real client and records, in epoch
// ms (sub-millisecond, on the clock the bench process uses too), when each event was applied
// and when each diagnostic happened.
import { createLifeline, type Diagnostic } from 'lifeline-chat';
import { epochClock } from '../lib/epoch-clock.js';
import { getConfig, probe, runPage } from './probe.js';

export interface TimelineConfig {
  baseUrl: string;
  /** Followed one after the other. */
  turnIds: string[];
  /** Stall watchdog override (the stall benchmark); defaults otherwise. */
  idleMs?: number;
  firstEventMs?: number;
}

export interface TurnTimeline {
  turnId: string;
  status: string;
  /** [epoch ms, seq] of every applied event. */
  applied: [number, number][];
  completedAt: number;
}

export interface TimelineResult {
  turns: TurnTimeline[];
  diagnostics: { at: number; type: string; turnId?: string; delayMs?: number; path?: string; scope?: string }[];
  errors: string[];
}

runPage(async () => {
  const config = await getConfig<TimelineConfig>();
  const diagnostics: TimelineResult['diagnostics'] = [];
  const now = epochClock();
  const client = createLifeline({
    baseUrl: config.baseUrl,
    ...(config.idleMs !== undefined || config.firstEventMs !== undefined
      ? { stall: { ...(config.idleMs !== undefined ? { idleMs: config.idleMs } : {}), ...(config.firstEventMs !== undefined ? { firstEventMs: config.firstEventMs } : {}) } }
      : {}),
    onDiagnostic(diagnostic: Diagnostic) {
      const entry: TimelineResult['diagnostics'][number] = { at: now(), type: diagnostic.type };
      if ('turnId' in diagnostic) entry.turnId = diagnostic.turnId;
      if (diagnostic.type === 'retry') {
        entry.delayMs = diagnostic.delayMs;
        entry.scope = diagnostic.scope;
      }
      if (diagnostic.type === 'recovered' || diagnostic.type === 'recovering') entry.path = diagnostic.path;
      diagnostics.push(entry);
    },
  });
  await client.ready;
  const turns: TurnTimeline[] = [];
  for (const turnId of config.turnIds) {
    const turn = client.turn(turnId);
    const applied: [number, number][] = [];
    // The iterator hears each event as it is applied (snapshot notifications are batched per frame).
    const reading = (async () => {
      for await (const event of turn) applied.push([now(), event.seq]);
    })();
    const final = await turn.completed;
    const completedAt = now();
    await reading;
    turns.push({ turnId, status: final.status, applied, completedAt });
  }
  client.dispose();
  return { turns, diagnostics, errors: probe().errors } satisfies TimelineResult;
});
