/**
 * The hot path's decisions, pure: where one decoded event goes, given the turn so far, the
 * path that brought it (the turn's own stream, a replay page, another tab's relay) and
 * whether a replay runs. Next in line: applied (and whether it ended the turn); a
 * duplicate: dropped; a gap: filled from the log, or left to the replay that runs; another
 * turn's event, one after `turn.end`, a text over its cap, or a gap in the log itself:
 * the path stops (a bad stream is retried, a bad log is final). The follower carries out
 * what this answers (docs/protocol.md section 2: each seq applied once, in order).
 */
import type { Failure } from './failure-policy.js';
import { applyNext, classifyEvent, skipEvent, type ReducerLimits, type TurnState } from './turn-reducer.js';
import { ProtocolError } from '../errors.js';
import { isTurnEvent, type DecodeResult } from '../protocol/decode.js';
import type { LoggedEvent, TurnEvent } from '../protocol/schemas.js';

/** Where an event came from. */
export type Source = 'stream' | 'replay' | 'relay';

export type Placement =
  /** Applied: the turn after it, the event to show (`undefined` for an unknown type: stored and relayed, never shown: docs/faults.md row 46). */
  | { readonly kind: 'apply'; readonly turn: TurnState; readonly event: LoggedEvent; readonly shown: TurnEvent | undefined; readonly ended: boolean }
  | { readonly kind: 'duplicate'; readonly seq: number }
  /** Events are missing before `got`; `fill`: read the log now (a relay during a replay leaves it to the replay). */
  | { readonly kind: 'gap'; readonly expected: number; readonly got: number; readonly fill: boolean }
  /** The path that brought it must stop. */
  | { readonly kind: 'stop'; readonly failure: Failure }
  /** An unknown event without a seq: nothing can place it. */
  | { readonly kind: 'skip' };

/** Decides where `decoded` goes; never throws. */
export function placeEvent(turn: TurnState, decoded: DecodeResult, from: Source, replaying: boolean, limits: ReducerLimits): Placement {
  const disposition = from === 'replay' ? 'fatal' : 'retry';
  if (decoded.kind === 'error') return { kind: 'stop', failure: { error: decoded.error, disposition } };
  const event = decoded.event;
  if (!event) return { kind: 'skip' };
  // An unknown event is placed by its turn and seq alone (its type is never `delta`).
  const verdict = classifyEvent(turn, event as TurnEvent, limits);
  if (verdict === 'next') {
    const shown = isTurnEvent(event) ? event : undefined;
    // Unknown: its seq is consumed, nothing shown.
    const after = shown ? applyNext(turn, shown) : skipEvent(turn, event.seq);
    return { kind: 'apply', turn: after, event, shown, ended: after.phase === 'ended' };
  }
  if (verdict === 'duplicate') return { kind: 'duplicate', seq: event.seq };
  if (verdict === 'gap' && from !== 'replay') return { kind: 'gap', expected: turn.lastSeq + 1, got: event.seq, fill: from === 'stream' || !replaying };
  if (verdict === 'too-large') return { kind: 'stop', failure: { error: new ProtocolError('turn_too_large', 'Text over maxTurnTextLength.'), disposition: 'fatal' } };
  // A gap in the log itself, an event of another turn or after turn.end.
  return { kind: 'stop', failure: { error: new ProtocolError('seq_mismatch', `Event ${event.seq} out of place (${verdict}).`), disposition } };
}
