/**
 * The turn's applied events: every event, whatever brought it (stream, replay, another
 * tab), goes through `take` and the pure reducer, so each seq is applied exactly once, in
 * order. This is the hot path: it calls the reducer, storage and the iterators directly,
 * and tells the follower's machine only an attempt's first progress, a gap, and the end.
 */
import { isEnded } from '../core/domain.js';
import type { Failure } from '../core/failure-policy.js';
import type { FollowInput } from '../core/follow-types.js';
import { applyEvent, applyNext, classifyEvent, foldedTurnState, skipEvent, turnEntries, turnText, type TurnState } from '../core/turn-reducer.js';
import { errorFromJson, ProtocolError, type LifelineError } from '../errors.js';
import { decodeEvent, isTurnEvent, type DecodeResult } from '../protocol/decode.js';
import type { LoggedEvent, TurnEvent } from '../protocol/schemas.js';
import type { FoldedTurn } from '../storage/persistence.js';
import type { LoadedTurn } from '../storage/store.js';
import type { Diagnostic, LimitOptions } from '../types.js';

/** Where an applied event came from. */
export type Source = 'stream' | 'replay' | 'relay';

/** Diagnostics about one turn (they carry `turnId`), and their fields besides type, time and turn. */
export type TurnDiagnosticType = Extract<Diagnostic, { turnId: string }>['type'] | 'protocol-error';
export type TurnDiagnosticFields<T extends TurnDiagnosticType> = Omit<Extract<Diagnostic, { type: T }>, 'type' | 'at' | 'turnId'>;

/** What the intake needs from its follower. */
export interface IntakeHost {
  readonly id: string;
  readonly limits: LimitOptions;
  /** The machine replays (relayed events then only merge into it). */
  replaying(): boolean;
  dispatch(input: FollowInput): void;
  tell<T extends TurnDiagnosticType>(type: T, fields: TurnDiagnosticFields<T>): void;
  /**
   * An event was applied: store it, hand `shown` to the iterators and (leading) relay it to
   * the other tabs. `shown` is the event itself, or `undefined` for an unknown type (stored
   * and relayed, never shown: docs/faults.md row 46).
   */
  applied(event: LoggedEvent, from: Source, raw: string | undefined, shown: TurnEvent | undefined): void;
  /** Something the app reads changed. */
  changed(): void;
  /** The request in flight (or the relay) made a sound. */
  heard(): void;
}

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
    private readonly host: IntakeHost,
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

  /**
   * Applies or drops one decoded event. Answers why the path that brought it must stop:
   * a bad stream is dropped and retried, a bad log is final.
   */
  take(decoded: DecodeResult, from: Source, raw?: string): Failure | void {
    const { host } = this;
    const disposition = from === 'replay' ? 'fatal' : 'retry';
    if (decoded.kind === 'error') return { error: decoded.error, disposition };
    if (decoded.kind === 'unknown') {
      host.tell('unknown-event', { eventType: decoded.type });
      // Placed like any event (docs/faults.md row 46): no hole in storage, no gap in a watching tab. Without a seq it cannot be.
      return decoded.event && this.#place(decoded.event, from, raw);
    }
    return this.#place(decoded.event, from, raw);
  }

  /** Applies `event` when it is next; answers why the path that brought it must stop, if it must. */
  #place(event: LoggedEvent, from: Source, raw: string | undefined): Failure | void {
    const { host } = this;
    const disposition = from === 'replay' ? 'fatal' : 'retry';
    // An unknown event is placed by its turn and seq alone (its type is never `delta`).
    const verdict = classifyEvent(this.turn, event as TurnEvent, host.limits);
    if (verdict === 'next') return this.#apply(event, from, raw);
    if (verdict === 'duplicate') return host.tell('duplicate', { seq: event.seq });
    if (verdict === 'gap') {
      host.tell('gap', { expected: this.turn.lastSeq + 1, got: event.seq });
      // Filled from the log before anything later applies (a relay during a replay: the replay fills it).
      if (from === 'stream' || (from === 'relay' && !host.replaying())) return host.dispatch({ kind: 'gap' });
      if (from === 'relay') return;
    }
    // A gap in the log itself, an event of another turn or after turn.end, or a text over its cap.
    return verdict === 'too-large'
      ? { error: new ProtocolError('turn_too_large', 'Text over maxTurnTextLength.'), disposition: 'fatal' }
      : { error: new ProtocolError('seq_mismatch', `Event ${event.seq} out of place (${verdict}).`), disposition };
  }

  /** Relayed by the leading tab: applied like a stream of our own, under the stall watchdog. */
  takeRelayed(lastSeq: number, batch: readonly string[]): void {
    const { host } = this;
    const replaying = host.replaying();
    if (!replaying) host.heard();
    if (!this.#relayed) {
      this.#relayed = true;
      host.tell('shared', { role: 'watcher' });
    }
    for (const text of batch) {
      // During a replay relayed events only merge into it, by seq: the replay fills any hole.
      const failed = this.take(decodeEvent(text, host.limits, host.id), 'relay');
      if (failed) {
        if (!replaying) host.tell('protocol-error', { error: failed.error }), host.dispatch({ kind: 'gap' });
        return;
      }
    }
    // Behind the leader (joined late): heartbeats alone would hide it.
    if (lastSeq > this.turn.lastSeq && !host.replaying()) {
      host.tell('gap', { expected: this.turn.lastSeq + 1, got: lastSeq });
      host.dispatch({ kind: 'gap' });
    }
  }

  /** Takes what storage held (before any network); answers the machine's `restored` input. */
  restore({ record, events }: LoadedTurn, limits: LimitOptions): Extract<FollowInput, { kind: 'restored' }> {
    if (record.text !== undefined) {
      // A folded turn: ended, its events are gone.
      this.turn = foldedTurnState(this.host.id, { ...record, text: record.text, actions: record.actions ?? [] });
      const error = record.error && errorFromJson(record.error);
      const status = isEnded(record.status) ? record.status : 'failed';
      return { kind: 'restored', hasEvents: true, ended: true, final: { status, error } };
    }
    for (const event of events) this.turn = isTurnEvent(event) ? applyEvent(this.turn, event, limits) : skipEvent(this.turn, event.seq);
    return { kind: 'restored', hasEvents: this.turn.lastSeq > 0, ended: this.turn.phase === 'ended' };
  }

  /** The ended turn as one stored row: its text, actions and parts (its events are dropped). */
  folded(error: LifelineError | undefined): FoldedTurn {
    const { turn } = this;
    const status = error ? 'failed' : (turn.end?.status ?? 'failed');
    return { status, text: turnText(turn), actions: turn.actions, parts: turnEntries(turn), lastSeq: turn.lastSeq, ...(error && { error }) };
  }

  /** Hot path: `event` was classified `next`. */
  #apply(event: LoggedEvent, from: Source, raw: string | undefined): void {
    const { host } = this;
    const shown = isTurnEvent(event) ? event : undefined;
    // Unknown: its seq is consumed, nothing shown.
    this.turn = shown ? applyNext(this.turn, shown) : skipEvent(this.turn, event.seq);
    host.applied(event, from, raw, shown);
    this.#count++;
    if (!this.#progressed) {
      this.#progressed = true;
      host.dispatch({ kind: 'progress', from, seq: event.seq });
    }
    if (this.turn.phase === 'ended') host.dispatch({ kind: 'ended' });
    host.changed();
  }
}
