/**
 * The hot path's decisions, pure (core/event-placement.ts): where one event goes for each
 * path that can bring it, so each seq is applied once, in order (docs/protocol.md section 2).
 */
import { describe, expect, it } from 'vitest';
import { placeEvent, type Source } from '../../../src/core/event-placement.js';
import { initialTurnState, reduceEvents } from '../../../src/core/turn-reducer.js';
import { ProtocolError } from '../../../src/errors.js';
import type { DecodeResult } from '../../../src/protocol/decode.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';

const TURN = 'turn_abcdefghijklmnop';
const start: TurnEvent = { turnId: TURN, seq: 1, type: 'turn.start', conversationId: 'conv_abcdefghijklmnop', messageId: 'msg_abcdefghijklmnop' } as TurnEvent;
const delta = (seq: number, text = 'x', turnId = TURN): DecodeResult => ({ kind: 'event', event: { turnId, seq, type: 'delta', text } as TurnEvent });
const end = (seq: number): TurnEvent => ({ turnId: TURN, seq, type: 'turn.end', status: 'complete', textLength: 1, textSha256: '0'.repeat(64) }) as TurnEvent;
const limits = {};
const afterStart = reduceEvents(TURN, [start]);
const SOURCES: Source[] = ['stream', 'replay', 'relay'];

describe('placeEvent', () => {
  it('applies the next event from any path and says when it ended the turn', () => {
    for (const from of SOURCES) {
      const placed = placeEvent(afterStart, delta(2, 'hi'), from, false, limits);
      expect(placed.kind === 'apply' && placed.turn.lastSeq).toBe(2);
      expect(placed.kind === 'apply' && placed.ended).toBe(false);
      const ended = placeEvent(reduceEvents(TURN, [start, (delta(2) as { event: TurnEvent }).event]), { kind: 'event', event: end(3) }, from, false, limits);
      expect(ended.kind === 'apply' && ended.ended).toBe(true);
    }
  });

  it('drops a duplicate, and leaves the turn as it was', () => {
    expect(placeEvent(afterStart, { kind: 'event', event: start }, 'stream', false, limits)).toEqual({ kind: 'duplicate', seq: 1 });
  });

  it('fills a gap from the log, except a relayed one while a replay runs, and a gap in the log itself is final', () => {
    expect(placeEvent(afterStart, delta(5), 'stream', true, limits)).toMatchObject({ kind: 'gap', expected: 2, got: 5, fill: true });
    expect(placeEvent(afterStart, delta(5), 'relay', false, limits)).toMatchObject({ kind: 'gap', fill: true });
    expect(placeEvent(afterStart, delta(5), 'relay', true, limits)).toMatchObject({ kind: 'gap', fill: false });
    expect(placeEvent(afterStart, delta(5), 'replay', false, limits)).toMatchObject({ kind: 'stop', failure: { disposition: 'fatal', error: { code: 'seq_mismatch' } } });
  });

  it('stops the path on another turn’s event or one after turn.end: a stream is retried, a log is not', () => {
    const foreign = delta(2, 'x', 'turn_zzzzzzzzzzzzzzzz');
    expect(placeEvent(afterStart, foreign, 'stream', false, limits)).toMatchObject({ kind: 'stop', failure: { disposition: 'retry' } });
    expect(placeEvent(afterStart, foreign, 'replay', false, limits)).toMatchObject({ kind: 'stop', failure: { disposition: 'fatal' } });
    const ended = reduceEvents(TURN, [start, end(2)]);
    expect(placeEvent(ended, delta(3), 'stream', false, limits)).toMatchObject({ kind: 'stop', failure: { error: { code: 'seq_mismatch' } } });
  });

  it('stops for good on a text over its cap and on an undecodable event by the path', () => {
    expect(placeEvent(afterStart, delta(2, 'toolong'), 'stream', false, { maxTurnTextLength: 3 })).toMatchObject({ kind: 'stop', failure: { disposition: 'fatal', error: { code: 'turn_too_large' } } });
    const bad: DecodeResult = { kind: 'error', error: new ProtocolError('invalid_event', 'bad') };
    expect(placeEvent(afterStart, bad, 'relay', false, limits)).toMatchObject({ kind: 'stop', failure: { disposition: 'retry' } });
  });

  it('places an unknown event by its seq without showing it, and skips one without a seq', () => {
    const unknown: DecodeResult = { kind: 'unknown', type: 'future', event: { turnId: TURN, seq: 2, type: 'future' } };
    const placed = placeEvent(afterStart, unknown, 'stream', false, limits);
    expect(placed).toMatchObject({ kind: 'apply', shown: undefined });
    expect(placed.kind === 'apply' && placed.turn.lastSeq).toBe(2);
    expect(placeEvent(initialTurnState(TURN), { kind: 'unknown', type: 'future', event: undefined }, 'stream', false, limits)).toEqual({ kind: 'skip' });
  });
});
