/**
 * The follower's imperative shell: runs the machine of `core/follow-machine.ts` (every
 * decision is a transition there) and carries out its effects: the stream attempt, replay
 * pages, the named timers, the integrity check, tab sharing, storage.
 *
 * Events never go through the machine: the intake places each one (the hot path, its
 * decisions pure in `core/event-placement.ts`) and this file carries out the answer. It is
 * the only caller of storage, the consumers (through its outlet), the tab relay and
 * `send`: the requests, the intake and the report below it answer, and never call back up.
 */
import type { Source } from '../core/event-placement.js';
import type { Failure } from '../core/failure-policy.js';
import { initialFollowState, transition } from '../core/follow-machine.js';
import { crashedState } from '../core/follow-state.js';
import type { FollowConfig, FollowEffect, FollowInput, FollowState, TimerName } from '../core/follow-types.js';
import { initialTurnState } from '../core/turn-reducer.js';
import { LifelineError, ProtocolError } from '../errors.js';
import { decodeData, type DecodeResult } from '../protocol/decode.js';
import type { LoggedEvent, TurnEvent } from '../protocol/schemas.js';
import { joinTurnShare, type TurnShare } from '../tabs/turn-share.js';
import { createEffectRunner, type EffectRunner } from './effect-runner.js';
import { TurnIntake } from './intake.js';
import { fetchPage, openStream, verifyTurn, type RequestHost } from './requests.js';
import { TurnReport } from './report.js';
import { Settlement } from './settlement.js';
import { visiblyChanged } from './snapshot.js';
import type { FollowerDeps } from './types.js';

/** Where the shell hands what the app reads: the follower's handles and snapshot. */
export interface ShellOutlet {
  /** An applied event, for the app's iterators. */
  deliver(event: TurnEvent): void;
  /** The turn reached `done`: iterators end, `completed` settles with the final snapshot. */
  settle(): void;
  /** Something the snapshot shows changed. */
  changed(): void;
}

export class FollowShell {
  readonly intake: TurnIntake;
  readonly report: TurnReport;
  readonly settlement = new Settlement();
  readonly runner: EffectRunner;
  state: FollowState = initialFollowState();
  /** Wall minus monotonic time at the last transition: shows the machine's monotonic retry time as epoch ms. */
  wallOffset = 0;
  /** The main stream attempt a `stall` drill made deaf (a later attempt hears again). */
  deaf: AbortSignal | undefined;
  #inbox: FollowInput[] = [];
  #dispatching = false;
  #share: TurnShare | undefined;
  /** When the request in flight (or the relay) last made a sound: an event or a heartbeat (monotonic ms). */
  #heard = 0;
  /** A stamp of `#heard` is queued (see `#hear`). */
  #hearing = false;
  /** The settings the machine reads, from the app's options (fixed for the follower's life). */
  readonly #config: FollowConfig;
  readonly #requests: RequestHost;

  constructor(
    readonly id: string,
    path: string,
    private readonly deps: FollowerDeps,
    private readonly outlet: ShellOutlet,
  ) {
    this.#config = { retry: deps.retry, firstEventMs: deps.stall.firstEventMs, idleMs: deps.stall.idleMs };
    this.report = new TurnReport({
      id,
      emit: deps.emit,
      now: deps.clock.wallNow,
      lastSeq: () => this.intake.turn.lastSeq,
      burst: () => this.intake.count,
      changed: () => outlet.changed(),
    });
    this.intake = new TurnIntake(initialTurnState(id), deps.limits, (type, fields) => this.report.tell(type, fields));
    this.runner = createEffectRunner(deps.clock, deps.timers);
    this.#requests = {
      id,
      path,
      deps,
      runner: this.runner,
      turn: () => this.intake.turn,
      beginAttempt: () => this.intake.beginAttempt(),
      opened: (input) => this.send(input),
      message: (signal, data) => this.#message(signal, data),
      take: (decoded, from) => this.#guarded(() => this.#take(decoded, from)),
    };
  }

  /** Feeds the machine one input and runs its effects; an input raised meanwhile waits its turn, in order. */
  send(input: FollowInput): void {
    this.#inbox.push(input);
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      for (let next; (next = this.#inbox.shift()); ) {
        const before = this.state;
        // One reading of each clock per transition: the machine decides on monotonic time; a
        // retry's `at` (wall) plus its delay is the `nextRetryAt` the snapshot shows.
        const at = this.deps.clock.now();
        const wall = this.deps.clock.wallNow();
        this.wallOffset = wall - at;
        const step = transition(before, next, { now: at, random: this.deps.random(), config: this.#config });
        this.state = step.state;
        if (visiblyChanged(before, step.state)) this.outlet.changed();
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
        return this.#answer(openStream(this.#requests, this.state.backoff.attempt));
      case 'fetch-page':
        return this.#answer(fetchPage(this.#requests, effect.slot));
      case 'verify':
        return this.#answer(verifyTurn(this.#requests));
      case 'abort':
        return this.runner.abort(effect.slot);
      case 'arm':
        if (effect.fresh && effect.timer === 'stall') this.#heard = this.deps.clock.now();
        return this.runner.arm(effect.timer, effect.ms, () => this.#fire(effect.timer));
      case 'clear':
        return this.runner.clear(effect.timer);
      case 'say':
        return this.report.say(effect.notice, wall);
      case 'leave':
        return this.#leave();
      case 'discard':
        this.intake.turn = initialTurnState(this.id);
        this.deps.persistence.discard(this.id);
        return this.outlet.changed();
      case 'fold':
        return void this.deps.persistence.end(this.id, this.intake.folded(effect.error));
      case 'release':
        return this.settlement.release();
      case 'settle':
        return this.outlet.settle();
      case 'unsettle':
        return this.settlement.unsettle();
    }
  }

  /** A request's end, as the machine's input (none when it is stale). */
  #answer(request: Promise<FollowInput | undefined>): void {
    void request.then((input) => input && this.send(input));
  }

  #fire(timer: TimerName): void {
    const since = timer === 'stall' ? this.#heard : this.runner.armedAt(timer);
    this.send({ kind: 'timer', timer, silentMs: this.deps.clock.now() - since });
  }

  /** One SSE message of the main stream: a heartbeat or an event, unless a `stall` drill made that stream deaf. */
  #message(signal: AbortSignal, data: string | undefined): Failure | void {
    if (signal === this.deaf) return;
    this.#hear();
    // Heartbeats are relayed too: they keep the watching tabs' watchdogs quiet.
    if (data === undefined) return this.#share?.relay();
    // #guarded inlined: no closure per event on the hot path.
    try {
      return this.#takeData(data, 'stream');
    } catch (bug) {
      this.#crash(bug);
    }
  }

  /**
   * Stamps the stream's last sound once its current run of messages is taken: a chunk's
   * messages are parsed in one go, so the clock is read once per chunk rather than once per
   * event (a reading costs more than taking a delta). The stamp lands before any timer can
   * fire (timers are tasks, it is a microtask), at the time the last of them was handled.
   */
  #hear(): void {
    if (this.#hearing) return;
    this.#hearing = true;
    queueMicrotask(() => {
      this.#hearing = false;
      this.#heard = this.deps.clock.now();
    });
  }

  /** Decodes and takes one event's data; a plain delta next in line skips the wrappers (decode result, placement). */
  #takeData(data: string, from: Source): Failure | void {
    const decoded = decodeData(data, this.deps.limits, this.id);
    if ('kind' in decoded) return this.#take(decoded, from, data);
    if (this.intake.takeNext(decoded)) return this.#applied(decoded, decoded, false, from, data);
    return this.#take({ kind: 'event', event: decoded }, from, data);
  }

  /**
   * The hot path's shell: places one event (the decision is pure) and carries it out: stored,
   * shown, relayed by the leader (stream or replay, so watchers replay only to fill gaps of
   * their own), and the machine told an attempt's first progress, a gap, the end.
   */
  #take(decoded: DecodeResult, from: Source, raw?: string): Failure | void {
    const placed = this.intake.take(decoded, from, this.state.mode.via === 'replay');
    switch (placed.kind) {
      case 'apply':
        return this.#applied(placed.event, placed.shown, placed.ended, from, raw);
      case 'gap':
        return placed.fill ? this.send({ kind: 'gap' }) : undefined;
      case 'stop':
        return placed.failure;
    }
  }

  /** Carries out an applied event: stored, shown, relayed, and the machine told an attempt's first progress, the end. */
  #applied(event: LoggedEvent, shown: TurnEvent | undefined, ended: boolean, from: Source, raw: string | undefined): void {
    this.deps.persistence.append(this.id, event);
    if (shown) this.outlet.deliver(shown);
    if (from !== 'relay') this.#share?.relay(raw ?? event);
    if (this.intake.firstOfAttempt()) this.send({ kind: 'progress', from, seq: event.seq });
    if (ended) this.send({ kind: 'ended' });
    this.outlet.changed();
  }

  /** A batch the leading tab relayed: applied like a stream of our own, under the stall watchdog. */
  #takeRelayed(lastSeq: number, batch: readonly string[]): void {
    const replaying = (): boolean => this.state.mode.via === 'replay';
    // During a replay relayed events only merge into it, by seq: the replay fills any hole.
    if (!replaying()) this.#heard = this.deps.clock.now();
    this.intake.relayArrived();
    for (const text of batch) {
      const failed = this.#takeData(text, 'relay');
      if (!failed) continue;
      if (!replaying()) this.report.tell('protocol-error', { error: failed.error }), this.send({ kind: 'gap' });
      return;
    }
    // Behind the leader (joined late): heartbeats alone would hide it.
    if (lastSeq > this.intake.turn.lastSeq && !replaying()) {
      this.report.tell('gap', { expected: this.intake.turn.lastSeq + 1, got: lastSeq });
      this.send({ kind: 'gap' });
    }
  }

  /** Joins the tabs sharing this turn; until the lock comes this tab watches. */
  join(): void {
    const { deps } = this;
    this.send({ kind: deps.network.online() ? 'online' : 'offline' });
    this.#share?.leave();
    this.intake.joined();
    const handlers = {
      onLead: (shared: boolean) => {
        if (shared) this.report.tell('shared', { role: 'leader' });
        this.send({ kind: 'role', role: 'leader' });
      },
      onBatch: (lastSeq: number, batch: readonly string[]) => this.#guarded(() => this.#takeRelayed(lastSeq, batch)),
      onBadBatch: () => this.report.tell('protocol-error', { error: new ProtocolError('invalid_event', 'Invalid relayed batch.') }),
    };
    this.#share = joinTurnShare(deps.tabs, `lifeline-turn:${deps.namespace}:${this.id}`, handlers, () => this.intake.turn.lastSeq);
    this.send({ kind: 'role', role: this.#share ? 'watcher' : 'solo' });
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
    this.runner.clearAll();
    this.#leave();
    this.state = crashedState(this.state, error);
    this.report.say({ type: 'failed', scope: 'stream', error }, this.deps.clock.wallNow());
    this.settlement.release();
    this.outlet.changed();
    this.outlet.settle();
  }

  #guarded<T>(apply: () => T): T | undefined {
    try {
      return apply();
    } catch (bug) {
      this.#crash(bug);
      return undefined;
    }
  }
}
