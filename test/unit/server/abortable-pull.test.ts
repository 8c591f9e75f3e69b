/**
 * The producer's pull of an agent (src/server/producer/abortable-pull.ts): answered at once
 * when the turn is stopped, even while the agent hangs, and holding nothing of the events
 * it already answered while the turn goes on.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ABORTED, AbortablePull } from '../../../src/server/producer/abortable-pull.js';
import type { AgentEvent } from '../../../src/server/producer/agent.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** An agent that yields `count` deltas, then never answers again. */
function agent(count: number, seen: WeakRef<object>[]): AsyncIterator<AgentEvent> {
  let i = 0;
  return {
    next: () => {
      if (i === count) return new Promise(() => undefined);
      const event: AgentEvent = { type: 'delta', text: `delta ${i++}` };
      seen.push(new WeakRef(event));
      return Promise.resolve({ done: false, value: event });
    },
  };
}

describe('AbortablePull', () => {
  it('answers ABORTED as soon as the signal aborts, while the agent hangs, and at once afterwards', async () => {
    const controller = new AbortController();
    const pull = new AbortablePull(controller.signal);
    const iterator = agent(1, []);
    expect(await pull.next(iterator)).toMatchObject({ done: false, value: { text: 'delta 0' } });
    const hanging = pull.next(iterator);
    controller.abort();
    expect(await hanging).toBe(ABORTED);
    expect(await pull.next(iterator)).toBe(ABORTED);
  });

  it('keeps none of the events it answered while the turn is live (a race per event against one abort promise kept them all)', async () => {
    const controller = new AbortController();
    const pull = new AbortablePull(controller.signal);
    const seen: WeakRef<object>[] = [];
    const iterator = agent(2_000, seen);
    for (let i = 0; i < 2_000; i++) await pull.next(iterator);
    // WeakRefs made in this job stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    const alive = seen.filter((ref) => ref.deref() !== undefined).length;
    expect(alive).toBeLessThan(10);
    expect(controller.signal.aborted).toBe(false);
  });
});
