import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyEvent, foldedTurnState, initialTurnState, reduceEvents, turnText, type TurnState } from '../../../src/core/turn-reducer.js';
import { turnEntries, turnParts, type MessagePart } from '../../../src/core/turn-read.js';
import type { JsonObject, PartObject, TurnEvent } from '../../../src/protocol/schemas.js';

const TURN = 'turn_abcdefghijklmnop';

type Body = { type: 'delta'; text: string; partId?: string; providerMetadata?: JsonObject } | { type: 'part'; part: PartObject };

const ids = fc.constantFrom('a', 'b');
const deltaArb = fc.record(
  {
    type: fc.constant('delta' as const),
    text: fc.string({ unit: 'grapheme', maxLength: 5 }),
    // 'z' is never opened: a delta naming no open part.
    partId: fc.constantFrom('a', 'b', 'z'),
    providerMetadata: fc.constantFrom({ p: { n: 1 } }, { p: { n: 2 } }),
  },
  { requiredKeys: ['type', 'text'] },
);
const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  { weight: 6, arbitrary: deltaArb },
  { weight: 2, arbitrary: ids.map((id) => ({ type: 'part' as const, part: { type: 'text-start', id } })) },
  { weight: 2, arbitrary: ids.map((id) => ({ type: 'part' as const, part: { type: 'text-end', id } })) },
  { weight: 2, arbitrary: fc.constantFrom('reasoning', 'step-start', 'data-x').map((type) => ({ type: 'part' as const, part: { type, n: 1 } })) },
);

const logArb = fc.array(bodyArb, { maxLength: 40 }).map((bodies): TurnEvent[] => bodies.map((body, i) => ({ ...body, turnId: TURN, seq: i + 1 }) as TurnEvent));

/**
 * The parts as a naive, non-incremental fold of the log says them (docs/protocol.md §9): a
 * delta goes to the open part its partId names; naming none, to the open text; naming a part
 * not open, to the open text if implicit, else to a new implicit part.
 */
function model(events: readonly TurnEvent[]): MessagePart[] {
  const parts: { type: string; text?: string; start?: PartObject; end?: PartObject; providerMetadata?: JsonObject }[] = [];
  const byId = new Map<unknown, number>();
  let open = -1;
  let implicit = false;
  for (const event of events) {
    if (event.type === 'delta') {
      const { partId, providerMetadata } = event;
      let target = partId === undefined ? open : (byId.get(partId) ?? (implicit ? open : -1));
      if (target < 0) {
        if (!event.text) continue;
        parts.push({ type: 'text', text: '' });
        target = parts.length - 1;
        implicit = true;
      } else if (target !== open) implicit = false;
      open = target;
      parts[target]!.text += event.text;
      if (providerMetadata) parts[target]!.providerMetadata = providerMetadata;
    } else if (event.type === 'part') {
      const { part } = event;
      if (part.type === 'text-start') {
        parts.push({ type: 'text', text: '', start: part });
        open = parts.length - 1;
        implicit = false;
        byId.set(part.id, open);
        continue;
      }
      if (open >= 0 && (implicit || (part.type === 'text-end' && parts[open]!.start?.id === part.id))) open = -1;
      const index = part.type === 'text-end' ? byId.get(part.id) : undefined;
      if (index === undefined) parts.push(part);
      else {
        parts[index]!.end = part;
        byId.delete(part.id);
      }
    }
  }
  return parts as MessagePart[];
}

const textOf = (parts: readonly MessagePart[]): string => parts.map((part) => (part.type === 'text' ? (part.text as string) : '')).join('');

describe('message parts', () => {
  it('places every delta in its text part, in order, whenever the state is read', () => {
    fc.assert(
      fc.property(logArb, fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }), (log, reads) => {
        let state: TurnState = initialTurnState(TURN);
        log.forEach((event, i) => {
          state = applyEvent(state, event);
          // Reading compacts the chunks: reads at random moments must never change the answer.
          if (reads[i]) expect(turnParts(state)).toEqual(model(log.slice(0, i + 1)));
        });
        const parts = turnParts(state);
        expect(parts).toEqual(model(log));
        // Every delta is in the text (and its proof) and in exactly one part; interleaved parts reorder it.
        expect(textOf(parts).length).toBe(turnText(state).length);
        expect(turnText(state)).toBe(log.map((event) => (event.type === 'delta' ? event.text : '')).join(''));
        // A folded row restores the same parts.
        const folded = foldedTurnState(TURN, { lastSeq: state.lastSeq, text: turnText(state), actions: [], parts: turnEntries(state) });
        expect(turnParts(folded)).toEqual(parts);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a plain-text turn as one implicit text part, and text, a part, then text as three', () => {
    const plain = reduceEvents(TURN, [delta(1, 'Hel'), delta(2, ''), delta(3, 'lo')]);
    expect(turnParts(plain)).toEqual([{ type: 'text', text: 'Hello' }]);
    const mixed = reduceEvents(TURN, [delta(1, 'a'), part(2, { type: 'reasoning', text: 'hm' }), delta(3, 'b')]);
    expect(turnParts(mixed)).toEqual([{ type: 'text', text: 'a' }, { type: 'reasoning', text: 'hm' }, { type: 'text', text: 'b' }]);
    // An old folded row (no parts) is one implicit text part; an empty one has none.
    expect(turnParts(foldedTurnState(TURN, { lastSeq: 3, text: 'old', actions: [] }))).toEqual([{ type: 'text', text: 'old' }]);
    expect(turnParts(foldedTurnState(TURN, { lastSeq: 3, text: '', actions: [] }))).toEqual([]);
  });

  it('keeps an explicit text part open across other parts until its own text-end', () => {
    const state = reduceEvents(TURN, [
      part(1, { type: 'text-start', id: 't1' }),
      delta(2, 'one '),
      part(3, { type: 'reasoning-delta', id: 'r', delta: 'x' }),
      delta(4, 'two'),
      part(5, { type: 'text-end', id: 'other' }),
      part(6, { type: 'text-end', id: 't1' }),
      delta(7, 'tail'),
    ]);
    expect(turnParts(state)).toEqual([
      { type: 'text', text: 'one two', start: { type: 'text-start', id: 't1' }, end: { type: 'text-end', id: 't1' } },
      { type: 'reasoning-delta', id: 'r', delta: 'x' },
      { type: 'text-end', id: 'other' },
      { type: 'text', text: 'tail' },
    ]);
  });

  it('places interleaved deltas in their own parts, in place, and keeps each part\'s last metadata', () => {
    const state = reduceEvents(TURN, [
      part(1, { type: 'text-start', id: 'p' }),
      part(2, { type: 'text-start', id: 'q' }),
      delta(3, 'The answer ', 'p'),
      delta(4, '42', 'q', { m: { n: 1 } }),
      delta(5, 'is ', 'p'),
      delta(6, '.', 'q'),
      part(7, { type: 'text-end', id: 'p' }),
      delta(8, '!', 'p'),
    ]);
    expect(turnText(state)).toBe('The answer 42is .!');
    expect(turnParts(state)).toEqual([
      { type: 'text', text: 'The answer is ', start: { type: 'text-start', id: 'p' }, end: { type: 'text-end', id: 'p' } },
      { type: 'text', text: '42.', start: { type: 'text-start', id: 'q' }, providerMetadata: { m: { n: 1 } } },
      // p has ended: its late delta reads as implicit text.
      { type: 'text', text: '!' },
    ]);
  });

  it('keeps older states intact when a fork applies to one of them after the newest was read', () => {
    const base = reduceEvents(TURN, [delta(1, 'ab'), part(2, { type: 'x' }), delta(3, 'cd')]);
    const left = applyEvent(base, delta(4, 'L'));
    expect(turnText(left)).toBe('abcdL');
    const right = applyEvent(base, part(4, { type: 'y' }));
    const rightMore = applyEvent(right, delta(5, 'R'));
    expect(turnParts(rightMore)).toEqual([{ type: 'text', text: 'ab' }, { type: 'x' }, { type: 'text', text: 'cd' }, { type: 'y' }, { type: 'text', text: 'R' }]);
    expect(turnParts(left)).toEqual([{ type: 'text', text: 'ab' }, { type: 'x' }, { type: 'text', text: 'cdL' }]);
    expect(turnText(base)).toBe('abcd');
    expect(turnParts(base)).toEqual([{ type: 'text', text: 'ab' }, { type: 'x' }, { type: 'text', text: 'cd' }]);
  });

  it('holds the read text once: its chunks are compacted into it', () => {
    let state = initialTurnState(TURN);
    for (let seq = 1; seq <= 100; seq++) state = applyEvent(state, delta(seq, 'xy'));
    expect(state.chunks.tail).toHaveLength(100);
    expect(turnText(state)).toBe('xy'.repeat(100));
    expect(state.chunks.tail).toHaveLength(0);
    state = applyEvent(state, delta(101, 'z'));
    expect(turnText(state)).toBe('xy'.repeat(100) + 'z');
  });
});

function delta(seq: number, text: string, partId?: string, providerMetadata?: JsonObject): TurnEvent {
  return { turnId: TURN, seq, type: 'delta', text, ...(partId !== undefined && { partId }), ...(providerMetadata && { providerMetadata }) };
}

function part(seq: number, value: PartObject): TurnEvent {
  return { turnId: TURN, seq, type: 'part', part: value };
}
