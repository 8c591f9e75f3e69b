/**
 * Follows one turn: runs the machine of `core/follow-machine.ts` (every decision is a
 * transition there) and carries out its effects: the stream attempt, replay pages, the
 * named timers, the integrity check, tab sharing. One instance per turn id per client.
 *
 * Every event, whatever brought it (stream, replay, another tab, storage), goes through
 * `#take` and the pure reducer, so each seq is applied exactly once, in order. That hot
 * path calls the reducer and storage directly; the machine hears only an attempt's first
 * progress, gaps and the end.
 */
import { transition, initialFollowState } from '../core/follow-machine.js';
import type { FollowEffect, FollowInput, FollowNotice, FollowState, TimerName } from '../core/follow-types.js';
import { createBatcher, createEmitter, type Batcher, type Emitter } from '../core/subscribable.js';
import { applyEvent, applyNext, classifyEvent, foldedTurnState, initialTurnState, skipEvent, turnEntries, turnText, type TurnState } from '../core/turn-reducer.js';
import { asLifelineError, errorFromJson, ProtocolError, type LifelineError } from '../errors.js';
import { decodeEvent, DEFAULT_MAX_EVENT_SIZE, type DecodeResult } from '../protocol/decode.js';
import { cancelAnswerSchema, type TurnEvent } from '../protocol/schemas.js';
import type { LoadedTurn } from '../storage/store.js';
import type { Failure } from '../core/failure-policy.js';
import { requestJson } from '../transport/http.js';
import { streamLimitsFor } from '../transport/sse-connection.js';
import { joinTurnShare, type TurnShare } from '../tabs/turn-share.js';
import type { Diagnostic, EndedTurnSnapshot, RecoveryInfo, RecoveryPath, StallInfo, Turn, TurnSnapshot } from '../types.js';
import { isEndedStatus } from '../core/domain.js';
import { createEffectRunner, type EffectRunner } from './effect-runner.js';
import { verifyText } from './integrity.js';
import { fetchReplayPage } from './replay-page.js';
import { runStreamAttempt } from './sse-attempt.js';
import { buildSnapshot, describeTurn } from './snapshot.js';
import { createConsumers, type Consumers } from './consumers.js';
import type { FollowerDeps, TurnFollower, TurnOrigin } from './types.js';

/** Diagnostics about one turn (they carry `turnId`), and their fields besides type, time and turn. */
type TurnDiagnosticType = Extract<Diagnostic, { turnId: string }>['type'];
type TurnDiagnosticFields<T extends TurnDiagnosticType> = Omit<Extract<Diagnostic, { type: T }>, 'type' | 'at' | 'turnId'>;

/** Where an applied event came from. */
type Source = 'stream' | 'replay' | 'relay';

/** Creates the follower of turn `id`; nothing runs before `start`. */
export function follow(id: string, deps: FollowerDeps): TurnFollower {
  return new Follower(id, deps);
}

class Follower implements TurnFollower {
  readonly id: string;
  #deps: FollowerDeps;
  #path: string;
  #turn: TurnState;
  #machine: FollowState = initialFollowState();
  #runner: EffectRunner;
  #inbox: FollowInput[] = [];
  #dispatching = false;
  #share: TurnShare | undefined;
  #listeners: Emitter<void> = createEmitter<void>();
  #batcher: Batcher;
  #consumers: Consumers;
  #snapshot: TurnSnapshot | undefined;
  #origin: TurnOrigin = {};
  #createdAt: number;
  #recovered: RecoveryInfo | undefined;
  #stall: StallInfo | undefined;
  #completed!: Promise<EndedTurnSnapshot>;
  #resolveCompleted!: (snapshot: EndedTurnSnapshot) => void;
  /** Resolved when the running replay is over or the turn settled. */
  #waiters: (() => void)[] = [];
  /** The current attempt applied an event (reported to the machine once). */
  #progressed = false;
  /** Events the current stream connection applied (the size of a resumed burst). */
  #applied = 0;
  /** When the request in flight (or the relay) last made a sound: an event or a heartbeat. */
  #heard = 0;
  /** A relayed batch arrived since joining (the `watcher` diagnostic was said). */
  #relayed = false;

  constructor(id: string, deps: FollowerDeps) {
    this.id = id;
    this.#deps = deps;
    // Ids match the protocol's id pattern: they need no escaping.
    this.#path = '/turns/' + id;
    this.#turn = initialTurnState(id);
    this.#createdAt = deps.now();
    this.#runner = createEffectRunner(deps.now);
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.#consumers = createConsumers(this, () => this.#close(), () => this.#reopen());
    this.#unsettle();
    this.subscribe = this.#listeners.subscribe;
    deps.persistence.track(id, () => describeTurn(this.#turn, this.#origin, this.#machine.status, this.#createdAt));
  }

  // ------------------------------------------------------------------ the public handle

  readonly subscribe: (listener: () => void) => () => void;
  get completed(): Promise<EndedTurnSnapshot> {
    return this.#completed;
  }
  get done(): boolean {
    return this.#machine.phase === 'done';
  }
  get lastSeq(): number {
    return this.#turn.lastSeq;
  }
  get createdAt(): number {
    return this.#createdAt;
  }
  getSnapshot = (): TurnSnapshot =>
    (this.#snapshot ??= buildSnapshot(this.id, this.#turn, this.#machine, this.#origin, this.#recovered, this.#stall));

  [Symbol.asyncIterator](): AsyncIterator<TurnEvent> {
    return this.#consumers.iterate();
  }

  claim(): Turn {
    return this.#consumers.claim();
  }

  async cancel(): Promise<void> {
    const answer = await requestJson(this.#deps, 'POST', this.#path + '/cancel', cancelAnswerSchema, 100_000);
    if (!answer.ok) throw answer.failure.error;
  }

  close(): void {
    this.#consumers.closeAll();
  }

  setOrigin(known: TurnOrigin): void {
    this.#origin = { ...this.#origin, ...known };
    this.#changed();
    this.#deps.persistence.saveTurn(this.id);
  }

  restore({ record, events }: LoadedTurn): void {
    this.#origin = record;
    this.#createdAt = record.createdAt;
    if (record.text !== undefined) {
      // A folded turn: ended, its events are gone.
      this.#turn = foldedTurnState(this.id, { ...record, text: record.text, actions: record.actions ?? [] });
      const error = record.error && errorFromJson(record.error);
      const status = record.status === 'complete' || record.status === 'cancelled' ? record.status : 'failed';
      return this.#dispatch({ kind: 'restored', hasEvents: true, ended: true, final: { status, error } });
    }
    for (const event of events) this.#turn = applyEvent(this.#turn, event, this.#deps.limits);
    this.#dispatch({ kind: 'restored', hasEvents: this.#turn.lastSeq > 0, ended: this.#turn.phase === 'ended' });
    // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
    if (this.#turn.lastSeq) this.#markRecovered('reload', this.#turn.lastSeq);
    this.#changed();
  }

  start(replayFirst = false): Promise<void> {
    if (!this.#consumers.wanted) return Promise.resolve();
    if (!this.#machine.following && this.#machine.phase !== 'done') this.#join();
    const over = replayFirst && this.#machine.phase !== 'done' ? this.#replayOver() : Promise.resolve();
    this.#dispatch({ kind: 'start', replayFirst });
    return over;
  }

  revive(): Promise<void> {
    if (this.#machine.phase !== 'done' || !this.#machine.revivable) return Promise.resolve();
    this.#join();
    const over = this.#replayOver();
    this.#dispatch({ kind: 'revive' });
    return over;
  }

  replayAlongside(): Promise<void> {
    const over = this.#replayOver();
    this.#dispatch({ kind: 'recover' });
    return over;
  }

  onNetwork(online: boolean): void {
    this.#dispatch({ kind: online ? 'online' : 'offline' });
  }

  onResume(): void {
    this.#dispatch({ kind: 'resume' });
  }

  dispose(): void {
    this.#close();
    this.#batcher.cancel();
  }

  #close(): void {
    this.#dispatch({ kind: 'close' });
    this.#consumers.endIterators();
    this.#release();
  }

  #reopen(): void {
    if (!this.#machine.following) void this.start();
  }

  // ------------------------------------------------------------------ the machine

  #dispatch(input: FollowInput): void {
    this.#inbox.push(input);
    // Effects may dispatch (a listener closes the turn): handled after this input, in order.
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      for (let next; (next = this.#inbox.shift()); ) {
        const before = this.#machine;
        const { now, random, stall, retry } = this.#deps;
        // One clock reading per transition: a retry's `at` plus its delay is exactly `nextRetryAt`.
        const at = now();
        const step = transition(before, next, { now: at, random: random(), config: { retry, firstEventMs: stall.firstEventMs, idleMs: stall.idleMs } });
        this.#machine = step.state;
        if (visiblyChanged(before, step.state)) this.#changed();
        for (const effect of step.effects) this.#run(effect, at);
      }
    } catch (bug) {
      // A bug, not a network condition: fail visibly rather than spin.
      this.#inbox.length = 0;
      this.#say({ type: 'failed', scope: 'stream', error: asLifelineError(bug) });
    } finally {
      this.#dispatching = false;
    }
  }

  #run(effect: FollowEffect, at: number): void {
    switch (effect.kind) {
      case 'open-stream':
        return this.#openStream();
      case 'fetch-page':
        return this.#fetchPage(effect.slot);
      case 'abort':
        return this.#runner.abort(effect.slot);
      case 'arm':
        if (effect.fresh && effect.timer === 'stall') this.#heard = this.#deps.now();
        return this.#runner.arm(effect.timer, effect.ms, () => this.#fire(effect.timer));
      case 'clear':
        return this.#runner.clear(effect.timer);
      case 'say':
        return this.#say(effect.notice, at);
      case 'leave':
        this.#share?.leave();
        this.#share = undefined;
        return;
      case 'verify':
        return this.#verify();
      case 'discard':
        this.#turn = initialTurnState(this.id);
        this.#deps.persistence.discard(this.id);
        return this.#changed();
      case 'fold':
        return this.#fold(effect.error);
      case 'release':
        return this.#release();
      case 'settle': {
        this.#consumers.endIterators();
        const final = this.getSnapshot();
        if (isEndedSnapshot(final)) this.#resolveCompleted(final);
        return;
      }
      case 'unsettle':
        return this.#unsettle();
    }
  }

  #fire(timer: TimerName): void {
    const since = timer === 'stall' ? this.#heard : this.#runner.armedAt(timer);
    this.#dispatch({ kind: 'timer', timer, silentMs: this.#deps.now() - since });
  }

  #say(notice: FollowNotice, at = this.#deps.now()): void {
    const { emit } = this.#deps;
    const base = { at, turnId: this.id };
    switch (notice.type) {
      case 'recovering':
        return emit({ ...base, type: 'recovering', path: 'replay', fromSeq: this.#turn.lastSeq });
      case 'retry':
      case 'failed':
        return emit({ ...notice, at, id: this.id } as Diagnostic);
      case 'recovered':
        // A resumed burst arrives in one chunk: counted once this task has applied it.
        if (notice.path === 'resume') return queueMicrotask(() => this.#markRecovered('resume', this.#applied));
        return this.#markRecovered('replay', notice.events);
      case 'stalled':
        this.#stall = { at, watchdog: notice.watchdog };
        this.#changed();
        break;
    }
    emit({ ...base, ...notice } as Diagnostic);
  }

  /** Emits a diagnostic about this turn, stamped now. */
  #tell<T extends TurnDiagnosticType>(type: T, fields: TurnDiagnosticFields<T>): void {
    this.#deps.emit({ type, at: this.#deps.now(), turnId: this.id, ...fields } as Diagnostic);
  }

  #markRecovered(path: RecoveryPath, events: number): void {
    this.#recovered = { path, events, at: this.#deps.now() };
    this.#tell('recovered', { path, events });
    this.#changed();
  }

  #unsettle(): void {
    this.#completed = new Promise((resolve) => (this.#resolveCompleted = resolve));
  }

  #release(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  #replayOver(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #changed(): void {
    this.#snapshot = undefined;
    this.#batcher.request();
  }

  // ------------------------------------------------------------------ effects that do I/O

  /** Joins the tabs sharing this turn; until the lock comes this tab watches. */
  #join(): void {
    this.#dispatch({ kind: this.#deps.network.online() ? 'online' : 'offline' });
    this.#share?.leave();
    this.#relayed = false;
    this.#share = joinTurnShare(`lifeline-turn:${this.#deps.namespace}:${this.id}`, {
      onLead: (shared) => {
        if (shared) this.#tell('shared', { role: 'leader' });
        this.#dispatch({ kind: 'role', role: 'leader' });
      },
      onBatch: (lastSeq, batch) => this.#applyRelayed(lastSeq, batch),
      onBadBatch: () => this.#say({ type: 'protocol-error', error: new ProtocolError('invalid_event', 'Invalid relayed batch.') }),
    });
    this.#dispatch({ kind: 'role', role: this.#share ? 'watcher' : 'solo' });
  }

  #openStream(): void {
    const controller = this.#runner.begin('main');
    const lastEventId = this.#turn.lastSeq;
    this.#progressed = false;
    this.#applied = 0;
    const { limits } = this.#deps;
    this.#tell('connect', { attempt: this.#machine.backoff.attempt, lastEventId });
    void runStreamAttempt({
      ...this.#deps,
      path: this.#path,
      lastEventId,
      limits: streamLimitsFor(limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE),
      signal: controller.signal,
      onOpen: (heartbeatMs) => this.#dispatch({ kind: 'opened', lastEventId, heartbeatMs }),
      onMessage: (data) => {
        this.#heard = this.#deps.now();
        if (data === undefined) return this.#share?.relay(() => this.#turn.lastSeq);
        return this.#take(decodeEvent(data, limits, this.id), 'stream', data);
      },
    }).then((end) => {
      if (!this.#runner.current('main', controller)) return;
      if (end.kind === 'no-content') this.#dispatch({ kind: 'no-content' });
      else if (end.kind === 'failed') this.#dispatch({ kind: 'failed', slot: 'main', failure: end.failure, closed: end.closed });
    });
  }

  #fetchPage(slot: 'main' | 'alongside'): void {
    const controller = this.#runner.begin(slot);
    if (slot === 'main') this.#progressed = false;
    const { limits } = this.#deps;
    void fetchReplayPage({
      ...this.#deps,
      signal: controller.signal,
      path: this.#path,
      turnId: this.id,
      lastSeq: () => this.#turn.lastSeq,
      maxEventSize: limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE,
      take: (decoded) => this.#take(decoded, 'replay'),
      ended: () => this.#turn.phase === 'ended',
    }).then((result) => {
      if (!this.#runner.current(slot, controller)) return;
      this.#dispatch('more' in result ? { kind: 'page', slot, ...result } : { kind: 'failed', slot, failure: result });
    });
  }

  #verify(): void {
    const end = this.#turn.end!;
    const text = turnText(this.#turn);
    void verifyText(text, end).then(({ matches, unchecked }) => {
      if (unchecked) this.#tell('integrity-unchecked', {});
      this.#dispatch({ kind: 'verified', matches, status: end.status, expectedLength: end.textLength, actualLength: text.length });
    });
  }

  /** Stores the ended turn as one row with its text (its events are dropped). */
  #fold(error: LifelineError | undefined): void {
    const turn = this.#turn;
    const status = error ? 'failed' : (turn.end?.status ?? 'failed');
    void this.#deps.persistence.end(this.id, { status, text: turnText(turn), actions: turn.actions, parts: turnEntries(turn), lastSeq: turn.lastSeq, ...(error && { error }) });
  }

  // ------------------------------------------------------------------ applying events

  /** Relayed by the leading tab: applied like a stream of our own, under the stall watchdog. */
  #applyRelayed(lastSeq: number, batch: readonly string[]): void {
    const replaying = this.#machine.replay;
    if (!replaying) this.#heard = this.#deps.now();
    if (!this.#relayed) {
      this.#relayed = true;
      this.#tell('shared', { role: 'watcher' });
    }
    for (const text of batch) {
      // During a replay relayed events only merge into it, by seq: the replay fills any hole.
      const failed = this.#take(decodeEvent(text, this.#deps.limits, this.id), 'relay');
      if (failed) {
        if (!replaying) this.#say({ type: 'protocol-error', error: failed.error }), this.#dispatch({ kind: 'gap' });
        return;
      }
    }
    // Behind the leader (joined late): heartbeats alone would hide it.
    if (lastSeq > this.#turn.lastSeq && !this.#machine.replay) {
      this.#tell('gap', { expected: this.#turn.lastSeq + 1, got: lastSeq });
      this.#dispatch({ kind: 'gap' });
    }
  }

  /**
   * Applies or drops one decoded event. Answers why the path that brought it must stop:
   * a bad stream is dropped and retried, a bad log is final.
   */
  #take(decoded: DecodeResult, from: Source, raw?: string): Failure | void {
    const { limits } = this.#deps;
    const disposition = from === 'replay' ? 'fatal' : 'retry';
    if (decoded.kind === 'error') return { error: decoded.error, disposition };
    if (decoded.kind === 'unknown') {
      this.#tell('unknown-event', { eventType: decoded.type });
      // Skipped, but its seq is consumed: otherwise the next event would look like a gap forever.
      this.#turn = skipEvent(this.#turn, decoded.seq ?? 0);
      return this.#changed();
    }
    const { event } = decoded;
    const verdict = classifyEvent(this.#turn, event, limits);
    if (verdict === 'next') return this.#apply(event, from, raw);
    if (verdict === 'duplicate') return this.#tell('duplicate', { seq: event.seq });
    if (verdict === 'gap') {
      this.#tell('gap', { expected: this.#turn.lastSeq + 1, got: event.seq });
      // Filled from the log before anything later applies (a relay during a replay: the replay fills it).
      if (from === 'stream' || (from === 'relay' && !this.#machine.replay)) return this.#dispatch({ kind: 'gap' });
      if (from === 'relay') return;
    }
    // A gap in the log itself, an event of another turn or after turn.end, or a text over its cap.
    return verdict === 'too-large'
      ? { error: new ProtocolError('turn_too_large', 'Text over maxTurnTextLength.'), disposition: 'fatal' }
      : { error: new ProtocolError('seq_mismatch', `Event ${event.seq} out of place (${verdict}).`), disposition };
  }

  /** Hot path: `event` was classified `next`. */
  #apply(event: TurnEvent, from: Source, raw: string | undefined): void {
    this.#turn = applyNext(this.#turn, event);
    this.#deps.persistence.append(this.id, event);
    this.#consumers.deliver(event);
    this.#applied++;
    if (!this.#progressed) {
      this.#progressed = true;
      this.#dispatch({ kind: 'progress', from, seq: event.seq });
    }
    // The leader relays whatever it applied, stream or replay, so watchers replay only to fill gaps of their own.
    if (from !== 'relay') this.#share?.relay(() => this.#turn.lastSeq, raw ?? event);
    if (this.#turn.phase === 'ended') this.#dispatch({ kind: 'ended' });
    this.#changed();
  }
}

/** The turn reached an end status (the machine settles only in `done`, so always at `settle`). */
function isEndedSnapshot(snapshot: TurnSnapshot): snapshot is EndedTurnSnapshot {
  return isEndedStatus(snapshot.status);
}

/** The machine's fields the snapshot shows changed. */
function visiblyChanged(before: FollowState, after: FollowState): boolean {
  return (
    before.status !== after.status ||
    before.connection !== after.connection ||
    before.nextRetryAt !== after.nextRetryAt ||
    before.backoff.attempt !== after.backoff.attempt ||
    before.error !== after.error
  );
}
