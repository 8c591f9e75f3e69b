/**
 * The turn's applied events: every event, whatever brought it (stream, replay, another
 * tab), goes through `take`, which asks the pure `placeEvent` (core/event-placement.ts)
 * where it goes and keeps the result, so each seq is applied exactly once, in order. It
 * says the diagnostics of what it dropped and answers the rest to the follower, which alone
 * stores, shows, relays and tells the machine.
 */
import { isEnded } from '../core/domain.js';
import { placeEvent, type Placement, type Source } from '../core/event-placement.js';
import type { FollowInput } from '../core/follow-types.js';
import { applyEvent, applyNext, classifyEvent, foldedTurnState, skipEvent, turnText, type TurnState } from '../core/turn-reducer.js';
import { turnEntries } from '../core/turn-read.js';
import { errorFromJson, type LifelineError } from '../errors.js';
import { isTurnEvent, type DecodeResult } from '../protocol/decode.js';
import type { DeltaEvent } from '../protocol/schemas.js';
import type { FoldedTurn } from '../storage/persistence.js';
import type { LoadedTurn } from '../storage/store.js';
import type { Diagnostic, LimitOptions } from '../types.js';

export type { Source } from '../core/event-placement.js';

/** Diagnostics about one turn (they carry `turnId`), and their fields besides type, time and turn. */
export type TurnDiagnosticType = Extract<Diagnostic, { turnId: string }>['type'] | 'protocol-error';
export type TurnDiagnosticFields<T extends TurnDiagnosticType> = Omit<Extract<Diagnostic, { type: T }>, 'type' | 'at' | 'turnId'>;

/** Says a diagnostic about this turn. */
export type Tell = <T extends TurnDiagnosticType>(type: T, fields: TurnDiagnosticFields<T>) => void;

export class TurnIntake {
  turn: TurnState;
  /** The current attempt applied an event (reported to the machine once). */
  #progressed = false;
  /** Events the current stream connection applied (the size of a resumed burst). */
  #count = 0;
  /** A relayed batch arrived since joining (the `watcher` diagnostic was said). */
  #relayed = false;

  constructor(
    turn: TurnState,
    private readonly limits: LimitOptions,
    private readonly tell: Tell,
  ) {
    this.turn = turn;
  }

  /** Events the current attempt applied. */
  get count(): number {
    return this.#count;
  }

  /** A new attempt (stream or replay page) starts: its first event is progress again. */
  beginAttempt(): void {
    this.#progressed = false;
    this.#count = 0;
  }

  /** The tabs were joined again: the next relayed batch is announced. */
  joined(): void {
    this.#relayed = false;
  }

  /** A relayed batch arrived: the first since joining says this tab watches. */
  relayArrived(): void {
    if (this.#relayed) return;
    this.#relayed = true;
    this.tell('shared', { role: 'watcher' });
  }

  /**
   * The attempt's first applied event is progress to report: true once per attempt, asked
   * right after an `apply`.
   */
  firstOfAttempt(): boolean {
    if (this.#progressed) return false;
    this.#progressed = true;
    return true;
  }

  /**
   * The stream's shortcut for a text delta (nearly every event): applied when next in line,
   * as {@link take} would, without the {@link Placement} (an object fewer per event). False
   * for anything else, left untouched for {@link take}, which says why.
   */
  takeNext(event: DeltaEvent): boolean {
    const { turn } = this;
    if (classifyEvent(turn, event, this.limits) !== 'next') return false;
    this.turn = applyNext(turn, event);
    this.#count++;
    return true;
  }

  /** Places one decoded event (`replaying`: a replay runs, so relayed events only merge into it). */
  take(decoded: DecodeResult, from: Source, replaying: boolean): Placement {
    if (decoded.kind === 'unknown') this.tell('unknown-event', { eventType: decoded.type });
    const placed = placeEvent(this.turn, decoded, from, replaying, this.limits);
    switch (placed.kind) {
      case 'apply':
        this.turn = placed.turn;
        this.#count++;
        break;
      case 'duplicate':
        this.tell('duplicate', { seq: placed.seq });
        break;
      case 'gap':
        this.tell('gap', { expected: placed.expected, got: placed.got });
        break;
    }
    return placed;
  }

  /** Takes what storage held (before any network); answers the machine's `restored` input. */
  restore({ record, events }: LoadedTurn): Extract<FollowInput, { kind: 'restored' }> {
    if (record.text !== undefined) {
      // A folded turn: ended, its events are gone.
      this.turn = foldedTurnState(this.turn.turnId, { ...record, text: record.text, actions: record.actions ?? [] });
      const error = record.error && errorFromJson(record.error);
      const status = isEnded(record.status) ? record.status : 'failed';
      return { kind: 'restored', hasEvents: true, ended: true, final: { status, error } };
    }
    for (const event of events) this.turn = isTurnEvent(event) ? applyEvent(this.turn, event, this.limits) : skipEvent(this.turn, event.seq);
    return { kind: 'restored', hasEvents: this.turn.lastSeq > 0, ended: this.turn.phase === 'ended' };
  }

  /** The ended turn as one stored row: its text, actions and parts (its events are dropped). */
  folded(error: LifelineError | undefined): FoldedTurn {
    const { turn } = this;
    const status = error ? 'failed' : (turn.end?.status ?? 'failed');
    return { status, text: turnText(turn), actions: turn.actions, parts: turnEntries(turn), lastSeq: turn.lastSeq, ...(error && { error }) };
  }
}
