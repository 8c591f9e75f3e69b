/**
 * Follows one turn: runs the machine of `core/follow-machine.ts` (every decision is a
 * transition there) and carries out its effects: the stream attempt, replay pages, the
 * named timers, the integrity check, tab sharing. One instance per turn id per client.
 *
 * Events never go through the machine: `intake.ts` applies each one (the hot path) and
 * reports only an attempt's first progress, gaps and the end.
 */
import { transition, initialFollowState } from '../core/follow-machine.js';
import { crashedState, statusOf, streams } from '../core/follow-state.js';
import type { FollowConfig, FollowEffect, FollowInput, FollowState, TimerName } from '../core/follow-types.js';
import { createBatcher, createEmitter, type Batcher, type Emitter } from '../core/subscribable.js';
import { initialTurnState } from '../core/turn-reducer.js';
import { CancelledError, LifelineError, ProtocolError } from '../errors.js';
import { cancelAnswerSchema, type TurnEvent } from '../protocol/schemas.js';
import type { LoadedTurn } from '../storage/store.js';
import { deadline } from '../runtime/deadline.js';
import { requestJson } from '../transport/http.js';
import { joinTurnShare, type TurnShare } from '../tabs/turn-share.js';
import type { DrillKind, EndedTurnSnapshot, Turn, TurnSnapshot } from '../types.js';
import { createEffectRunner, type EffectRunner } from './effect-runner.js';
import { buildSnapshot, describeTurn, isEndedSnapshot, visiblyChanged } from './snapshot.js';
import { createConsumers, type Consumers } from './consumers.js';
import { TurnIntake } from './intake.js';
import { fetchPage, openStream, verifyTurn, type RequestHost } from './requests.js';
import { TurnReport } from './report.js';
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
  #completed!: Promise<EndedTurnSnapshot>;
  #resolveCompleted!: (snapshot: EndedTurnSnapshot) => void;
  /** Resolved when the running replay is over or the turn settled. */
  #waiters: (() => void)[] = [];
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
    this.#intake = new TurnIntake(initialTurnState(id), {
      id,
      limits: deps.limits,
      replaying: () => this.#machine.mode.via === 'replay',
      dispatch: (input) => this.#dispatch(input),
      tell: (type, fields) => this.#report.tell(type, fields),
      applied: (event, from, raw, shown) => {
        deps.persistence.append(id, event);
        if (shown) this.#consumers.deliver(shown);
        // The leader relays whatever it applied, stream or replay, so watchers replay only to fill gaps of their own.
        if (from !== 'relay') this.#share?.relay(raw ?? event);
      },
      changed: () => this.#changed(),
      heard: () => (this.#heard = deps.clock.now()),
    });
    this.#createdAt = deps.clock.wallNow();
    this.#runner = createEffectRunner(deps.clock, deps.timers);
    this.#requests = {
      id,
      path: this.#path,
      deps,
      runner: this.#runner,
      intake: this.#intake,
      share: () => this.#share,
      dispatch: (input) => this.#dispatch(input),
      heard: () => (this.#heard = deps.clock.now()),
      deaf: (signal) => signal === this.#deaf,
      guarded: (apply) => this.#guarded(apply),
    };
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.#consumers = createConsumers(this, () => this.#close(), () => this.#reopen());
    this.#unsettle();
    this.subscribe = this.#listeners.subscribe;
    deps.persistence.track(id, () => describeTurn(this.#intake.turn, this.#origin, statusOf(this.#machine), this.#createdAt));
  }

  readonly subscribe: (listener: () => void) => () => void;
  get completed(): Promise<EndedTurnSnapshot> {
    return this.#completed;
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

  /** One request, bounded by `requestTimeoutMs`; rejects `disposed` as soon as the client is. */
  async cancel(): Promise<void> {
    const { signal, timers, requestTimeoutMs } = this.#deps;
    signal.throwIfAborted();
    const limit = deadline(timers, requestTimeoutMs, signal);
    const answer = await requestJson({ ...this.#deps, signal: limit.signal }, 'POST', this.#path + '/cancel', cancelAnswerSchema, 100_000);
    limit.clear();
    signal.throwIfAborted();
    if (!answer.ok) throw answer.failure.error;
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
    this.#dispatch(this.#intake.restore(loaded, this.#deps.limits));
    // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
    const { lastSeq } = this.#intake.turn;
    if (lastSeq && loaded.record.text === undefined) this.#report.recover('reload', lastSeq);
    this.#changed();
  }

  start(replayFirst = false): Promise<void> {
    if (!this.#consumers.wanted) return Promise.resolve();
    if (this.#machine.phase === 'idle') this.#join();
    const over = replayFirst && this.#machine.phase !== 'done' ? this.#replayOver() : Promise.resolve();
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
    const over = this.#replayOver();
    this.#dispatch({ kind: 'revive' });
    return over;
  }

  replayAlongside(): Promise<void> {
    const over = this.#replayOver();
    this.#dispatch({ kind: 'recover' });
    return over;
  }

  drill(drill: DrillKind): (() => void) | undefined {
    const m = this.#machine;
    if (drill === 'replay') {
      // A live turn reads the log as it does for a gap (from its last seq); an ended one is rebuilt as for a receipt's 409.
      if (m.phase === 'done' ? m.error : m.phase === 'idle' || m.seen === 'end') return;
      return m.phase === 'done' ? () => this.rebuild() : () => this.#dispatch({ kind: 'gap' });
    }
    if (!streams(m)) return;
    return drill === 'cut' ? () => this.#dispatch({ kind: 'resume', drill: true }) : () => (this.#deaf = this.#runner.signal('main'));
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
    this.#resolveCompleted(
      Object.freeze({ ...live, status: 'failed', error: new CancelledError('disposed', 'The client was disposed.'), connection: Object.freeze({ state: 'closed', attempt: 0 }) } as const),
    );
  }

  #close(): void {
    this.#dispatch({ kind: 'close' });
    this.#consumers.endIterators();
    this.#release();
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
        return openStream(this.#requests, this.#machine.backoff.attempt);
      case 'fetch-page':
        return fetchPage(this.#requests, effect.slot);
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
        this.#share?.leave();
        this.#share = undefined;
        return;
      case 'verify':
        return verifyTurn(this.#requests);
      case 'discard':
        this.#intake.turn = initialTurnState(this.id);
        this.#deps.persistence.discard(this.id);
        return this.#changed();
      case 'fold':
        return void this.#deps.persistence.end(this.id, this.#intake.folded(effect.error));
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
    this.#share?.leave();
    this.#share = undefined;
    this.#machine = crashedState(this.#machine, error);
    this.#report.say({ type: 'failed', scope: 'stream', error }, this.#deps.clock.wallNow());
    this.#release();
    this.#consumers.endIterators();
    this.#changed();
    const final = this.getSnapshot();
    if (isEndedSnapshot(final)) this.#resolveCompleted(final);
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
        onBatch: (lastSeq, batch) => this.#guarded(() => this.#intake.takeRelayed(lastSeq, batch)),
        onBadBatch: () => this.#report.tell('protocol-error', { error: new ProtocolError('invalid_event', 'Invalid relayed batch.') }),
      },
      () => this.#intake.turn.lastSeq,
    );
    this.#dispatch({ kind: 'role', role: this.#share ? 'watcher' : 'solo' });
  }
}
