/**
 * The soak's agent: each turn streams seeded text (ASCII, accents, CJK, astral emoji,
 * so cuts land mid-UTF-8) as small deltas at a steady pace, sometimes with a
 * `propose_personas` action, and keeps talking while faults planned for its turn are
 * still waiting for a connection to hit, so every scheduled fault gets its chance.
 */
import type { Agent, AgentEvent } from '../../src/server/producer/agent.js';
import type { JsonValue } from '../../src/protocol/schemas.js';
import { sleep } from '../../src/runtime/sleep.js';
import { createPrng } from '../lib/prng.js';
import type { TurnPlan } from './schedule.js';

const WORDS = [' the', ' stream', ' survives', ',', ' café', ' naïve', ' 漢字', ' かな', ' 🙂', ' 🚀', ' data', ' ok', '.', '\n', ' ünïcödé'];

/** Submissions carry `{ soak: <turn index> }`; anything else is not a soak turn. */
export function soakIndexOf(content: unknown): number | undefined {
  if (typeof content !== 'object' || content === null) return undefined;
  const index = (content as { soak?: unknown }).soak;
  return typeof index === 'number' && Number.isInteger(index) ? index : undefined;
}

export interface SoakAgentHooks {
  plan(index: number): TurnPlan | undefined;
  /** True while faults of the turn are still waiting to fire. */
  pending(index: number): boolean;
}

const PERSONAS: JsonValue = [
  { name: 'Ada', role: 'skeptical engineer', quote: '“Prove it.”' },
  { name: 'Grace', role: 'product manager', quote: 'Ship it — carefully 🚢' },
];

/** Extra deltas a turn may add while it waits for its faults; bounds a turn whose faults cannot fire. */
const MAX_FILLER = 1500;

export function soakAgent(hooks: SoakAgentHooks, options: { delayMs?: number } = {}): Agent {
  const delayMs = options.delayMs ?? 3;
  return async function* ({ content, signal }) {
    const index = soakIndexOf(content);
    const plan = index === undefined ? undefined : hooks.plan(index);
    if (index === undefined || plan === undefined) {
      yield { type: 'delta', text: 'not a soak turn' };
      return;
    }
    const prng = createPrng(plan.textSeed);
    const next = (): AgentEvent => ({ type: 'delta', text: prng.pick(WORDS) });
    for (let i = 0; i < plan.deltas; i++) {
      if (signal.aborted) return;
      await sleep(delayMs, signal);
      if (plan.action && i === Math.floor(plan.deltas / 2)) {
        const callId = `call_${index}`;
        yield { type: 'action', callId, name: 'propose_personas', status: 'started', input: { count: 2 } };
        yield { type: 'action', callId, name: 'propose_personas', status: 'completed', output: PERSONAS };
      }
      yield next();
    }
    for (let filler = 0; filler < MAX_FILLER && hooks.pending(index); filler++) {
      if (signal.aborted) return;
      await sleep(delayMs, signal);
      yield next();
    }
  };
}
