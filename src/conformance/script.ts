/**
 * The conformance agent's trigger: a message whose content is
 * `{"lifelineConformance": 1, "steps": [...]}` asks the server's conformance agent to
 * yield exactly those steps, in order (docs/conformance.md). The suite builds the turns
 * it needs from a few steps and knows, step for step, which events must come back.
 */

/** One step of a conformance script. */
export type ScriptStep =
  | { delta: string }
  | { action: { callId: string; name: string; status: 'started' | 'completed' | 'failed'; input?: unknown; output?: unknown; error?: unknown } }
  | { part: { type: string; [member: string]: unknown } }
  | { pauseMs: number }
  | { fail: string }
  /** Since 1.2: a part `{"type": "data-lifeline-context", "data": <the submission's context, or null>}`. */
  | { echoContext: true };

/** The part type an `echoContext` step produces. */
export const CONTEXT_PART = 'data-lifeline-context';

/** The content of a message that runs a conformance script. */
export interface ScriptContent {
  lifelineConformance: 1;
  steps: ScriptStep[];
}

/** The event a step must produce (type and fields besides turnId/seq), or none for a pause. */
export type ExpectedEvent = { type: string; [field: string]: unknown };

export function scriptContent(steps: ScriptStep[]): ScriptContent {
  return { lifelineConformance: 1, steps };
}

/** The events between `turn.start` and `turn.end` that `steps` produce, and the turn's end status. */
export function expectedEvents(steps: readonly ScriptStep[], context?: Record<string, unknown>): { events: ExpectedEvent[]; endStatus: 'complete' | 'failed' } {
  const events: ExpectedEvent[] = [];
  for (const step of steps) {
    if ('echoContext' in step) events.push({ type: 'part', part: { type: CONTEXT_PART, data: context ?? null } });
    else if ('delta' in step) events.push({ type: 'delta', text: step.delta });
    else if ('action' in step) events.push({ type: 'action', ...step.action });
    else if ('part' in step) events.push({ type: 'part', part: step.part });
    else if ('fail' in step) return { events, endStatus: 'failed' };
  }
  return { events, endStatus: 'complete' };
}

/** Text that exercises UTF-16 lengths and UTF-8 hashing: astral emoji, CJK, combining marks. */
const SAMPLE = ['Lifeline ', 'conformance: ', 'naïve ', 'café ', '日本語 ', '😀👍🏽 ', '', 'e\u0301 ', '𝄞 ', 'end.'];

/**
 * The shape turn: text in many deltas (one empty), an action started and completed
 * around a part. Long enough to cut at every seq; every event type of the protocol.
 */
export function shapeScript(runId: string): ScriptStep[] {
  return [
    { delta: SAMPLE[0] ?? '' },
    { action: { callId: `conf_${runId}`, name: 'conformance_lookup', status: 'started', input: { query: 'lifeline', n: 2 } } },
    { part: { type: 'data-conformance', data: { runId, nested: { list: [1, 'two', null] } } } },
    ...SAMPLE.slice(1, 6).map((text) => ({ delta: text })),
    { action: { callId: `conf_${runId}`, name: 'conformance_lookup', status: 'completed', output: { hits: ['a', 'b'], total: 2 } } },
    ...SAMPLE.slice(6).map((text) => ({ delta: text })),
  ];
}

/** A turn with a quiet pause of `pauseMs` between two deltas: heartbeats must fill it. */
export function pauseScript(pauseMs: number): ScriptStep[] {
  return [{ delta: 'before the pause' }, { pauseMs }, { delta: ' and after it' }];
}

/** A turn that stays live for `holdMs` after its first delta, so it can be cancelled. */
export function holdScript(holdMs: number): ScriptStep[] {
  return [{ delta: 'holding' }, { pauseMs: holdMs }, { delta: ' (should have been cancelled)' }];
}

/** A turn whose agent fails after one delta. */
export function failScript(): ScriptStep[] {
  return [{ delta: 'about to fail' }, { fail: 'conformance agent failure' }];
}
