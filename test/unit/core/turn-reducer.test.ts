import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyEvent, classifyEvent, initialTurnState, reduceEvents, turnText, type TurnState } from '../../../src/core/turn-reducer.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';

const TURN = 'turn_abcdefghijklmnop';
const SHA = '0'.repeat(64);

type Body =
  | { type: 'delta'; text: string }
  | { type: 'action'; callId: string; name: string; status: 'started' | 'completed' | 'failed'; input?: number; output?: string };

const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }).map((text) => ({ type: 'delta' as const, text })) },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        type: fc.constant('action' as const),
        callId: fc.constantFrom('c1', 'c2', 'c3'),
        name: fc.constantFrom('propose_personas', 'search'),
        status: fc.constantFrom('started' as const, 'completed' as const, 'failed' as const),
        input: fc.integer(),
        output: fc.string({ maxLength: 4 }),
      },
      { requiredKeys: ['type', 'callId', 'name', 'status'] },
    ),
  },
);

/** A clean log: turn.start, bodies, turn.end. */
const logArb = fc
  .tuple(fc.array(bodyArb, { maxLength: 40 }), fc.constantFrom('complete' as const, 'failed' as const, 'cancelled' as const))
  .map(([bodies, status]): TurnEvent[] => {
    const events: TurnEvent[] = [
      { turnId: TURN, seq: 1, type: 'turn.start', messageId: 'm1', conversationId: 'c1', createdAt: '2025-01-01T00:00:00.000Z' },
    ];
    let length = 0;
    for (const body of bodies) {
      if (body.type === 'delta') length += body.text.length;
      events.push({ ...body, turnId: TURN, seq: events.length + 1 } as TurnEvent);
    }
    events.push({ turnId: TURN, seq: events.length + 1, type: 'turn.end', status, textLength: length, textSha256: SHA });
    return events;
  });

/** What a client does with one delivered event: apply when next, remember the seq. */
function deliver(state: TurnState, event: TurnEvent, applied: number[]): TurnState {
  if (classifyEvent(state, event) !== 'next') return state;
  applied.push(event.seq);
  return applyEvent(state, event);
}

function comparable(state: TurnState) {
  return {
    lastSeq: state.lastSeq,
    phase: state.phase,
    text: turnText(state),
    textLength: state.textLength,
    actions: state.actions,
    end: state.end,
    conversationId: state.conversationId,
  };
}

describe('turn reducer', () => {
  it('ends in the clean state for any duplicates, reorders, truncations and replays once all is delivered', () => {
    fc.assert(
      fc.property(
        logArb.chain((log) =>
          fc.tuple(
            fc.constant(log),
            // Stream deliveries: indices with duplicates and any order, interleaved with partial replays.
            fc.array(
              fc.oneof(
                fc.nat({ max: log.length - 1 }).map((index) => ({ kind: 'event' as const, index })),
                fc.nat({ max: log.length }).map((count) => ({ kind: 'replay' as const, count })),
              ),
              { maxLength: 120 },
            ),
          ),
        ),
        ([log, deliveries]) => {
          const applied: number[] = [];
          let state = initialTurnState(TURN);
          for (const delivery of deliveries) {
            if (delivery.kind === 'event') {
              state = deliver(state, log[delivery.index]!, applied);
            } else {
              // A replay page: events after the client's cursor, possibly truncated.
              for (const event of log.slice(state.lastSeq, state.lastSeq + delivery.count)) state = deliver(state, event, applied);
            }
          }
          // The final replay the client runs at end of stream or on a gap.
          for (const event of log.slice(state.lastSeq)) state = deliver(state, event, applied);

          expect(applied).toEqual(log.map((event) => event.seq));
          expect(comparable(state)).toEqual(comparable(reduceEvents(TURN, log)));
          expect(turnText(state)).toBe(
            log.map((event) => (event.type === 'delta' ? event.text : '')).join(''),
          );
          expect(state.textLength).toBe(turnText(state).length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('classifies duplicates, gaps, foreign and after-end events and leaves the state untouched', () => {
    const log = reduceLog(['a', 'b']);
    let state = initialTurnState(TURN);
    state = applyEvent(state, log[0]!);
    expect(classifyEvent(state, log[0]!)).toBe('duplicate');
    expect(classifyEvent(state, log[2]!)).toBe('gap');
    expect(applyEvent(state, log[2]!)).toBe(state);
    expect(classifyEvent(state, { ...log[1]!, turnId: 'other' })).toBe('foreign');
    const ended = reduceEvents(TURN, log);
    expect(ended.phase).toBe('ended');
    const late: TurnEvent = { turnId: TURN, seq: ended.lastSeq + 1, type: 'delta', text: 'x' };
    expect(classifyEvent(ended, late)).toBe('after-end');
    expect(applyEvent(ended, late)).toBe(ended);
  });

  it('refuses a delta that would pass the text cap', () => {
    const state = applyEvent(initialTurnState(TURN), { turnId: TURN, seq: 1, type: 'delta', text: 'abc' });
    const next: TurnEvent = { turnId: TURN, seq: 2, type: 'delta', text: 'de' };
    expect(classifyEvent(state, next, { maxTurnTextLength: 4 })).toBe('too-large');
    expect(applyEvent(state, next, { maxTurnTextLength: 4 })).toBe(state);
    expect(classifyEvent(state, next, { maxTurnTextLength: 5 })).toBe('next');
  });

  it('keeps older states intact when a newer state was built from them (shared parts fork)', () => {
    const base = reduceEvents(TURN, reduceLog(['ab', 'cd']).slice(0, 3));
    const left = applyEvent(base, { turnId: TURN, seq: 4, type: 'delta', text: 'L' });
    const right = applyEvent(base, { turnId: TURN, seq: 4, type: 'delta', text: 'R' });
    expect(turnText(left)).toBe('abcdL');
    expect(turnText(right)).toBe('abcdR');
    expect(turnText(base)).toBe('abcd');
    expect(turnText(left)).toBe('abcdL');
  });

  it('tracks actions by callId at their latest state, in order of first appearance, keeping earlier fields', () => {
    const events: TurnEvent[] = [
      { turnId: TURN, seq: 1, type: 'action', callId: 'b', name: 'propose_personas', status: 'started', input: { n: 3 } },
      { turnId: TURN, seq: 2, type: 'action', callId: 'a', name: 'search', status: 'started' },
      { turnId: TURN, seq: 3, type: 'action', callId: 'b', name: 'propose_personas', status: 'completed', output: [{ name: 'Ada' }] },
    ];
    const state = reduceEvents(TURN, events);
    expect(state.actions).toEqual([
      { callId: 'b', name: 'propose_personas', status: 'completed', input: { n: 3 }, output: [{ name: 'Ada' }], seq: 3 },
      { callId: 'a', name: 'search', status: 'started', seq: 2 },
    ]);
  });

  it('joins text lazily and answers the same string while nothing changed', () => {
    const state = reduceEvents(TURN, reduceLog(['日本', '😀', 'x']).slice(0, 4));
    const first = turnText(state);
    expect(first).toBe('日本😀x');
    expect(turnText(state)).toBe(first);
  });
});

function reduceLog(texts: string[]): TurnEvent[] {
  const events: TurnEvent[] = [
    { turnId: TURN, seq: 1, type: 'turn.start', messageId: 'm1', conversationId: 'c1', createdAt: '2025-01-01T00:00:00.000Z' },
  ];
  for (const text of texts) events.push({ turnId: TURN, seq: events.length + 1, type: 'delta', text });
  const length = texts.join('').length;
  events.push({ turnId: TURN, seq: events.length + 1, type: 'turn.end', status: 'complete', textLength: length, textSha256: SHA });
  return events;
}
