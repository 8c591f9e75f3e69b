/**
 * The AI SDK turn stream (src/ai-sdk/turn-stream.ts) holds nothing of the events it has
 * turned into chunks while the turn goes on: a long answer costs the chunks the app
 * keeps, not every event since the stream opened.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { turnStream } from '../../../src/ai-sdk/turn-stream.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import type { Turn, TurnSnapshot } from '../../../src/types.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A live turn that applies `count` deltas, then waits for ever; the events it handed out, weakly. */
function liveTurn(count: number, seen: WeakRef<object>[]): Turn {
  const snapshot = { id: 'turn_1', status: 'streaming', lastSeq: 0, parts: [] } as unknown as TurnSnapshot;
  let seq = 0;
  const iterator: AsyncIterator<TurnEvent> = {
    next: () => {
      if (seq === count) return new Promise(() => undefined);
      const event: TurnEvent = { turnId: 'turn_1', seq: ++seq, type: 'delta', text: `word ${seq} ` };
      seen.push(new WeakRef(event));
      return Promise.resolve({ done: false, value: event });
    },
  };
  return {
    id: 'turn_1',
    getSnapshot: () => snapshot,
    completed: new Promise(() => undefined),
    [Symbol.asyncIterator]: () => iterator,
  } as unknown as Turn;
}

describe('turnStream', () => {
  it('keeps none of the events it already streamed while the turn is live (a race per event against one abort promise kept them all)', async () => {
    const seen: WeakRef<object>[] = [];
    const controller = new AbortController();
    const reader = turnStream(liveTurn(2_000, seen), { signal: controller.signal }).getReader();
    let deltas = 0;
    while (deltas < 2_000) if ((await reader.read()).value?.type === 'text-delta') deltas++;
    // WeakRefs made in this job stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(seen.filter((ref) => ref.deref() !== undefined).length).toBeLessThan(10);
    controller.abort();
    expect((await reader.read()).done).toBe(true);
  });
});
