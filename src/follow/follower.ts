/**
 * Follows one turn: runs the machine of `core/follow-machine.ts` (every decision is a
 * transition there) and carries out its effects: the stream attempt, replay pages, the
 * named timers, the integrity check, tab sharing. One instance per turn id per client.
 *
 * Events never go through the machine: `intake.ts` places each one (the hot path, its
 * decisions pure in `core/event-placement.ts`) and this file carries out the answer. It
 * is the only caller of storage, the consumers, the tab relay and `#dispatch`: the
 * requests, the intake and the report below it answer, and never call back up.
 */
import { transition, initialFollowState } from '../core/follow-machine.js';
import { crashedState, statusOf, streams } from '../core/follow-state.js';
import type { FollowConfig, FollowEffect, FollowInput, FollowState, TimerName } from '../core/follow-types.js';
import { createBatcher, createEmitter, type Batcher, type Emitter } from '../core/subscribable.js';
import { initialTurnState } from '../core/turn-reducer.js';
import { CancelledError, LifelineError, ProtocolError } from '../errors.js';
import type { Source } from '../core/event-placement.js';
import type { Failure } from '../core/failure-policy.js';
import { decodeEvent, type DecodeResult } from '../protocol/decode.js';
import type { TurnEvent } from '../protocol/schemas.js';
import type { LoadedTurn } from '../storage/store.js';
import { joinTurnShare, type TurnShare } from '../tabs/turn-share.js';
import type { DrillKind, EndedTurnSnapshot, Turn, TurnSnapshot } from '../types.js';
import { createEffectRunner, type EffectRunner } from './effect-runner.js';
import { buildSnapshot, describeTurn, isEndedSnapshot, visiblyChanged } from './snapshot.js';
import { createConsumers, type Consumers } from './consumers.js';
import { TurnIntake } from './intake.js';
import { cancelTurn, fetchPage, openStream, verifyTurn, type RequestHost } from './requests.js';
import { TurnReport } from './report.js';
import { Settlement } from './settlement.js';
import type { FollowerDeps, TurnFollower, TurnOrigin } from './types.js';

/** Creates the follower of turn `id`; nothing runs before `start`. */
export function follow(id: string, deps: FollowerDeps): TurnFollower {
  return new Follower(id, deps);
}

class Follower implements TurnFollower {
  readonly id: string;
  #deps: FollowerDeps;
  #path: string;
  #intake: TurnIntake;
  #requests: RequestHost;
  #machine: FollowState = initialFollowState();
  /** The settings the machine reads, from the app's options (fixed for the follower's life). */
  #config: FollowConfig;
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
  #report: TurnReport;
  #settlement = new Settlement();
  /** When the request in flight (or the relay) last made a sound: an event or a heartbeat (monotonic ms). */
  #heard = 0;
  /** The main stream attempt a `stall` drill made deaf (a later attempt hears again). */
  #deaf: AbortSignal | undefined;
  /** Wall minus monotonic time at the last transition: shows the machine's monotonic `nextRetryAt` as epoch ms. */
  #wallOffset = 0;

  constructor(id: string, deps: FollowerDeps) {
    this.id = id;
    this.#deps = deps;
    this.#config = { retry: deps.retry, firstEventMs: deps.stall.firstEventMs, idleMs: deps.stall.idleMs };
    // Ids match the protocol's id pattern: they need no escaping.
    this.#path = '/turns/' + id;
    this.#report = new TurnReport({
      id,
      emit: deps.emit,
      now: deps.clock.wallNow,
      lastSeq: () => this.#intake.turn.lastSeq,
      burst: () => this.#intake.count,
      changed: () => this.#changed(),
    });
    this.#intake = new TurnIntake(initialTurnState(id), deps.limits, (type, fields) => this.#report.tell(type, fields));
    this.#createdAt = deps.clock.wallNow();
    this.#runner = createEffectRunner(deps.clock, deps.timers);
    this.#requests = {
      id,
      path: this.#path,
      deps,
      runner: this.#runner,
      turn: () => this.#intake.turn,
      beginAttempt: () => this.#intake.beginAttempt(),
      opened: (input) => this.#dispatch(input),
      message: (signal, data) => this.#message(signal, data),
      take: (decoded, from) => this.#guarded(() => this.#take(decoded, from)),
    };
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.#consumers = createConsumers(this, () => this.#close(), () => this.#reopen());
    this.subscribe = this.#listeners.subscribe;
    deps.persistence.track(id, () => describeTurn(this.#intake.turn, this.#origin, statusOf(this.#machine), this.#createdAt));
  }

  readonly subscribe: (listener: () => void) => () => void;
  get completed(): Promise<EndedTurnSnapshot> {
    return this.#settlement.completed;
  }
  get done(): boolean {
    return this.#machine.phase === 'done';
  }
  get lastSeq(): number {
    return this.#intake.turn.lastSeq;
  }
  get createdAt(): number {
    return this.#createdAt;
  }
  getSnapshot = (): TurnSnapshot =>
    (this.#snapshot ??= buildSnapshot(this.id, this.#intake.turn, this.#machine, this.#origin, this.#report.recovered, this.#report.stall, this.#wallOffset));

  [Symbol.asyncIterator](): AsyncIterator<TurnEvent> {
    return this.#consumers.iterate();
  }

  claim(): Turn {
    return this.#consumers.claim();
  }

  cancel(): Promise<void> {
    return cancelTurn(this.#deps, this.#path);
  }

  close(): void {
    this.#consumers.closeAll();
  }

  setOrigin(known: TurnOrigin): void {
    this.#origin = { ...this.#origin, ...known };
    if (known.createdAt !== undefined) this.#createdAt = known.createdAt;
    this.#changed();
    this.#deps.persistence.saveTurn(this.id);
  }

  restore(loaded: LoadedTurn): void {
    // Storage is taken only before the follower starts: once the machine follows (a handle
    // reopened the turn while its stored copy was still being read), replacing the intake's
    // turn would leave the machine unaware of what it holds (an ended turn looping
    // connect → 204 → replay). The network brings the same events instead.
    if (this.#machine.phase !== 'idle') return;
    this.#origin = loaded.record;
    this.#createdAt = loaded.record.createdAt;
    this.#dispatch(this.#intake.restore(loaded));
    // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
    const { lastSeq } = this.#intake.turn;
    if (lastSeq && loaded.record.text === undefined) this.#report.recover('reload', lastSeq);
    this.#changed();
  }

  start(replayFirst = false): Promise<void> {
    if (!this.#consumers.wanted) return Promise.resolve();
    if (this.#machine.phase === 'idle') this.#join();
    const over = replayFirst && this.#machine.phase !== 'done' ? this.#settlement.replayOver() : Promise.resolve();
    this.#dispatch({ kind: 'start', replayFirst });
    return over;
  }

  rebuild(): void {
    const machine = this.#machine;
    if (machine.phase !== 'done' || machine.error !== undefined) return;
    // Like revive: the turn is followed again, shared with the other tabs.
    this.#join();
    this.#dispatch({ kind: 'rebuild' });
  }

  revive(): Promise<void> {
    const machine = this.#machine;
    if (machine.phase !== 'done' || !machine.revivable) return Promise.resolve();
    this.#join();
    const over = this.#settlement.replayOver();
    this.#dispatch({ kind: 'revive' });
    return over;
  }

  replayAlongside(): Promise<void> {
    const over = this.#settlement.replayOver();
    this.#dispatch({ kind: 'recover' });
    return over;
  }

  drill(drill: DrillKind): boolean {
    const m = this.#machine;
    if (drill === 'replay') {
      // A live turn reads the log as it does for a gap (from its last seq); an ended one is rebuilt as for a receipt's 409.
      if (m.phase === 'done' ? m.error : m.phase === 'idle' || m.seen === 'end') return false;
      if (m.phase === 'done') this.rebuild();
      else this.#dispatch({ kind: 'gap' });
    } else if (!streams(m)) return false;
    else if (drill === 'cut') this.#dispatch({ kind: 'resume', drill: true });
    else this.#deaf = this.#runner.signal('main');
    return true;
  }

  onNetwork(online: boolean): void {
    this.#dispatch({ kind: online ? 'online' : 'offline' });
  }

  onResume(): void {
    this.#dispatch({ kind: 'resume' });
  }

  /**
   * Ends following for good. A turn not ended settles `completed` at once with status
   * `failed` and a `disposed` error (`completed` never rejects); storage keeps the turn as
   * it was, so the next page resumes it.
   */
  dispose(): void {
    this.#close();
    this.#batcher.cancel();
    if (this.#machine.phase === 'done') return;
    const live = this.getSnapshot();
    this.#settlement.settle(
      Object.freeze({ ...live, status: 'failed', error: new CancelledError('disposed', 'The client was disposed.'), connection: Object.freeze({ state: 'closed', attempt: 0 }) } as const),
    );
  }

  #close(): void {
    this.#dispatch({ kind: 'close' });
    this.#consumers.endIterators();
    this.#settlement.release();
  }

  #reopen(): void {
    if (this.#machine.phase === 'idle') void this.start();
  }

  #dispatch(input: FollowInput): void {
    this.#inbox.push(input);
    // Effects may dispatch (a listener closes the turn): handled after this input, in order.
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      for (let next; (next = this.#inbox.shift()); ) {
        const before = this.#machine;
        // One reading of each clock per transition: the machine decides on monotonic time; a
        // retry's `at` (wall) plus its delay is the `nextRetryAt` the snapshot shows.
        const at = this.#deps.clock.now();
        const wall = this.#deps.clock.wallNow();
        this.#wallOffset = wall - at;
        const step = transition(before, next, { now: at, random: this.#deps.random(), config: this.#config });
        this.#machine = step.state;
        if (visiblyChanged(before, step.state)) this.#changed();
        for (const effect of step.effects) this.#run(effect, wall);
      }
    } catch (bug) {
      this.#crash(bug);
    } finally {
      this.#dispatching = false;
    }
  }

  /** `wall`: the transition's epoch ms, for what it says. */
  #run(effect: FollowEffect, wall: number): void {
    switch (effect.kind) {
      case 'open-stream':
        return this.#answer(openStream(this.#requests, this.#machine.backoff.attempt));
      case 'fetch-page':
        return this.#answer(fetchPage(this.#requests, effect.slot));
      case 'verify':
        return this.#answer(verifyTurn(this.#requests));
      case 'abort':
        return this.#runner.abort(effect.slot);
      case 'arm':
        if (effect.fresh && effect.timer === 'stall') this.#heard = this.#deps.clock.now();
        return this.#runner.arm(effect.timer, effect.ms, () => this.#fire(effect.timer));
      case 'clear':
        return this.#runner.clear(effect.timer);
      case 'say':
        return this.#report.say(effect.notice, wall);
      case 'leave':
        return this.#leave();
      case 'discard':
        this.#intake.turn = initialTurnState(this.id);
        this.#deps.persistence.discard(this.id);
        return this.#changed();
      case 'fold':
        return void this.#deps.persistence.end(this.id, this.#intake.folded(effect.error));
      case 'release':
        return this.#settlement.release();
      case 'settle':
        return this.#settle();
      case 'unsettle':
        return this.#settlement.unsettle();
    }
  }

  /** A request's end, as the machine's input (none when it is stale). */
  #answer(request: Promise<FollowInput | undefined>): void {
    void request.then((input) => input && this.#dispatch(input));
  }

  /** One SSE message of the main stream: a heartbeat or an event, unless a `stall` drill made that stream deaf. */
  #message(signal: AbortSignal, data: string | undefined): Failure | void {
    if (signal === this.#deaf) return;
    this.#heard = this.#deps.clock.now();
    // Heartbeats are relayed too: they keep the watching tabs' watchdogs quiet.
    if (data === undefined) return this.#share?.relay();
    return this.#guarded(() => this.#take(decodeEvent(data, this.#deps.limits, this.id), 'stream', data));
  }

  /**
   * The hot path's shell: places one event (the decision is the intake's, pure) and carries
   * it out: stored, shown, relayed by the leader (stream or replay, so watchers replay only to
   * fill gaps of their own), and the machine told an attempt's first progress, a gap, the end.
   */
  #take(decoded: DecodeResult, from: Source, raw?: string): Failure | void {
    const taken = this.#intake.take(decoded, from, this.#machine.mode.via === 'replay');
    switch (taken.kind) {
      case 'apply':
        this.#deps.persistence.append(this.id, taken.event);
        if (taken.shown) this.#consumers.deliver(taken.shown);
        if (from !== 'relay') this.#share?.relay(raw ?? taken.event);
        if (this.#intake.firstOfAttempt()) this.#dispatch({ kind: 'progress', from, seq: taken.event.seq });
        if (taken.ended) this.#dispatch({ kind: 'ended' });
        return this.#changed();
      case 'gap':
        return taken.fill ? this.#dispatch({ kind: 'gap' }) : undefined;
      case 'stop':
        return taken.failure;
    }
  }

  /** A batch the leading tab relayed: applied like a stream of our own, under the stall watchdog. */
  #takeRelayed(lastSeq: number, batch: readonly string[]): void {
    const replaying = (): boolean => this.#machine.mode.via === 'replay';
    // During a replay relayed events only merge into it, by seq: the replay fills any hole.
    if (!replaying()) this.#heard = this.#deps.clock.now();
    this.#intake.relayArrived();
    for (const text of batch) {
      const failed = this.#take(decodeEvent(text, this.#deps.limits, this.id), 'relay');
      if (!failed) continue;
      if (!replaying()) this.#report.tell('protocol-error', { error: failed.error }), this.#dispatch({ kind: 'gap' });
      return;
    }
    // Behind the leader (joined late): heartbeats alone would hide it.
    if (lastSeq > this.#intake.turn.lastSeq && !replaying()) {
      this.#report.tell('gap', { expected: this.#intake.turn.lastSeq + 1, got: lastSeq });
      this.#dispatch({ kind: 'gap' });
    }
  }

  #settle(): void {
    this.#consumers.endIterators();
    const final = this.getSnapshot();
    if (isEndedSnapshot(final)) this.#settlement.settle(final);
  }

  #leave(): void {
    this.#share?.leave();
    this.#share = undefined;
  }

  /**
   * A throw inside this follower's own handling: a bug, not a network condition (docs/faults.md
   * row 45). The turn ends `failed` (`internal_error`) at once, visibly: every request and timer
   * stopped, the tab group left, `completed` settled. Not through the machine, which may be
   * what threw.
   */
  #crash(bug: unknown): void {
    this.#inbox.length = 0;
    const error = new LifelineError('internal_error', 'Lifeline failed while handling this turn.', { cause: bug });
    this.#runner.clearAll();
    this.#leave();
    this.#machine = crashedState(this.#machine, error);
    this.#report.say({ type: 'failed', scope: 'stream', error }, this.#deps.clock.wallNow());
    this.#settlement.release();
    this.#changed();
    this.#settle();
  }

  #guarded<T>(apply: () => T): T | undefined {
    try {
      return apply();
    } catch (bug) {
      this.#crash(bug);
      return undefined;
    }
  }

  #fire(timer: TimerName): void {
    const since = timer === 'stall' ? this.#heard : this.#runner.armedAt(timer);
    this.#dispatch({ kind: 'timer', timer, silentMs: this.#deps.clock.now() - since });
  }

  #changed(): void {
    this.#snapshot = undefined;
    this.#batcher.request();
  }

  /** Joins the tabs sharing this turn; until the lock comes this tab watches. */
  #join(): void {
    this.#dispatch({ kind: this.#deps.network.online() ? 'online' : 'offline' });
    this.#share?.leave();
    this.#intake.joined();
    this.#share = joinTurnShare(
      this.#deps.tabs,
      `lifeline-turn:${this.#deps.namespace}:${this.id}`,
      {
        onLead: (shared) => {
          if (shared) this.#report.tell('shared', { role: 'leader' });
          this.#dispatch({ kind: 'role', role: 'leader' });
        },
        onBatch: (lastSeq, batch) => this.#guarded(() => this.#takeRelayed(lastSeq, batch)),
        onBadBatch: () => this.#report.tell('protocol-error', { error: new ProtocolError('invalid_event', 'Invalid relayed batch.') }),
      },
      () => this.#intake.turn.lastSeq,
    );
    this.#dispatch({ kind: 'role', role: this.#share ? 'watcher' : 'solo' });
  }
}
