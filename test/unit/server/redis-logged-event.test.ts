import { describe, expect, it } from 'vitest';
import { loggedEvent } from '../../../src/server/log/redis/codec.js';

/** What a reader of the stored body gets: the reference loggedEvent must match. */
const parsedBack = (seq: number, event: object): unknown => ({ turnId: 't1', seq, ...(JSON.parse(JSON.stringify(event)) as object) });

describe('loggedEvent (an append hands its followers what readers will get)', () => {
  const cases: [string, object][] = [
    ['a delta', { type: 'delta', text: 'd00000000000001 ' }],
    ['a delta with a part id', { type: 'delta', text: 'x', partId: 'p1' }],
    ['lone surrogates and escapes', { type: 'delta', text: '\ud800 "\\\n\u0000' }],
    ['numbers, booleans, null', { type: 'turn.end', status: 'complete', textLength: 3, flag: true, none: null }],
    ['-0, NaN and Infinity', { type: 'x', a: -0, b: Number.NaN, c: Number.POSITIVE_INFINITY }],
    ['undefined fields', { type: 'delta', text: 'x', partId: undefined }],
    ['nested objects', { type: 'delta', text: 'x', providerMetadata: { a: { b: [1, undefined, 2] } } }],
    ['a Date', { type: 'x', at: new Date(0) }],
    ['its own turnId and seq', { type: 'delta', text: 'x', turnId: 'other', seq: 99 }],
    ['an own __proto__ key', JSON.parse('{"type":"delta","__proto__":"x"}') as object],
    ['a class instance', new (class Event { type = 'delta'; text = 'x'; })()],
  ];
  for (const [name, event] of cases) {
    it(`gives ${name} as JSON.parse of its body would`, () => {
      const logged = loggedEvent('t1', 7, event, JSON.stringify(event));
      expect(logged).toStrictEqual(parsedBack(7, event));
      expect(Object.keys(logged)).toEqual(Object.keys(parsedBack(7, event) as object));
    });
  }

  it('shares nothing with the event it was given', () => {
    const event = { type: 'delta', text: 'x', providerMetadata: { a: 1 } };
    const logged = loggedEvent('t1', 1, event, JSON.stringify(event)) as unknown as { providerMetadata: object };
    expect(logged.providerMetadata).not.toBe(event.providerMetadata);
  });
});
