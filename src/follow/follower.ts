/**
 * Follows one turn: the `Turn` handle the app holds and the calls the client makes, each
 * turned into an input of the follower's machine, run by its shell (`shell.ts`, the one
 * place that carries effects out). This file holds what the app reads: the snapshot, the
 * app's handles and iterators, and where the turn came from. One instance per turn id per
 * client.
 */
import { statusOf, streams } from '../core/follow-state.js';
import { createBatcher, createEmitter, type Batcher, type Emitter } from '../core/subscribable.js';
import { CancelledError } from '../errors.js';
import type { TurnEvent } from '../protocol/schemas.js';
import type { LoadedTurn } from '../storage/store.js';
import type { DrillKind, EndedTurnSnapshot, Turn, TurnSnapshot } from '../types.js';
import { createConsumers, type Consumers } from './consumers.js';
import { cancelTurn } from './requests.js';
import { FollowShell } from './shell.js';
import { buildSnapshot, describeTurn, isEndedSnapshot } from './snapshot.js';
import type { FollowerDeps, TurnFollower, TurnOrigin } from './types.js';

/** Creates the follower of turn `id`; nothing runs before `start`. */
export function follow(id: string, deps: FollowerDeps): TurnFollower {
  return new Follower(id, deps);
}

class Follower implements TurnFollower {
  readonly id: string;
  #deps: FollowerDeps;
  #path: string;
  #shell: FollowShell;
  #listeners: Emitter<void> = createEmitter<void>();
  #batcher: Batcher;
  #consumers: Consumers;
  #snapshot: TurnSnapshot | undefined;
  #origin: TurnOrigin = {};
  #createdAt: number;

  constructor(id: string, deps: FollowerDeps) {
    this.id = id;
    this.#deps = deps;
    // Ids match the protocol's id pattern: they need no escaping.
    this.#path = '/turns/' + id;
    this.#shell = new FollowShell(id, this.#path, deps, {
      deliver: (event) => this.#consumers.deliver(event),
      settle: () => this.#settle(),
      changed: () => this.#changed(),
    });
    this.#createdAt = deps.clock.wallNow();
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.#consumers = createConsumers(this, () => this.#close(), () => this.#reopen());
    this.subscribe = this.#listeners.subscribe;
    deps.persistence.track(id, () => describeTurn(this.#shell.intake.turn, this.#origin, statusOf(this.#shell.state), this.#createdAt));
  }

  readonly subscribe: (listener: () => void) => () => void;
  get completed(): Promise<EndedTurnSnapshot> {
    return this.#shell.settlement.completed;
  }
  get done(): boolean {
    return this.#shell.state.phase === 'done';
  }
  get lastSeq(): number {
    return this.#shell.intake.turn.lastSeq;
  }
  get createdAt(): number {
    return this.#createdAt;
  }
  getSnapshot = (): TurnSnapshot => {
    const { intake, state, report, wallOffset } = this.#shell;
    return (this.#snapshot ??= buildSnapshot(this.id, intake.turn, state, this.#origin, report.recovered, report.stall, wallOffset));
  };

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
    const shell = this.#shell;
    if (shell.state.phase !== 'idle') return;
    this.#origin = loaded.record;
    this.#createdAt = loaded.record.createdAt;
    shell.send(shell.intake.restore(loaded));
    // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
    const { lastSeq } = shell.intake.turn;
    if (lastSeq && loaded.record.text === undefined) shell.report.recover('reload', lastSeq);
    this.#changed();
  }

  start(replayFirst = false): Promise<void> {
    const shell = this.#shell;
    if (!this.#consumers.wanted) return Promise.resolve();
    if (shell.state.phase === 'idle') shell.join();
    const over = replayFirst && shell.state.phase !== 'done' ? shell.settlement.replayOver() : Promise.resolve();
    shell.send({ kind: 'start', replayFirst });
    return over;
  }

  rebuild(): void {
    const { state } = this.#shell;
    if (state.phase !== 'done' || state.error !== undefined) return;
    // Like revive: the turn is followed again, shared with the other tabs.
    this.#shell.join();
    this.#shell.send({ kind: 'rebuild' });
  }

  revive(): Promise<void> {
    const shell = this.#shell;
    if (shell.state.phase !== 'done' || !shell.state.revivable) return Promise.resolve();
    shell.join();
    const over = shell.settlement.replayOver();
    shell.send({ kind: 'revive' });
    return over;
  }

  replayAlongside(): Promise<void> {
    const over = this.#shell.settlement.replayOver();
    this.#shell.send({ kind: 'recover' });
    return over;
  }

  drill(drill: DrillKind): (() => void) | undefined {
    const shell = this.#shell;
    const m = shell.state;
    if (drill === 'replay') {
      // A live turn reads the log as it does for a gap (from its last seq); an ended one is rebuilt as for a receipt's 409.
      if (m.phase === 'done' ? m.error : m.phase === 'idle' || m.seen === 'end') return;
      return m.phase === 'done' ? () => this.rebuild() : () => shell.send({ kind: 'gap' });
    }
    if (!streams(m)) return;
    return drill === 'cut' ? () => shell.send({ kind: 'resume', drill: true }) : () => (shell.deaf = shell.runner.signal('main'));
  }

  onNetwork(online: boolean): void {
    this.#shell.send({ kind: online ? 'online' : 'offline' });
  }

  onResume(): void {
    this.#shell.send({ kind: 'resume' });
  }

  /**
   * Ends following for good. A turn not ended settles `completed` at once with status
   * `failed` and a `disposed` error (`completed` never rejects); storage keeps the turn as
   * it was, so the next page resumes it.
   */
  dispose(): void {
    this.#close();
    this.#batcher.cancel();
    if (this.#shell.state.phase === 'done') return;
    const live = this.getSnapshot();
    this.#shell.settlement.settle(
      Object.freeze({ ...live, status: 'failed', error: new CancelledError('disposed', 'The client was disposed.'), connection: Object.freeze({ state: 'closed', attempt: 0 }) } as const),
    );
  }

  #close(): void {
    this.#shell.send({ kind: 'close' });
    this.#consumers.endIterators();
    this.#shell.settlement.release();
  }

  #reopen(): void {
    if (this.#shell.state.phase === 'idle') void this.start();
  }

  /** The turn reached `done`: the iterators end and `completed` settles with the final snapshot. */
  #settle(): void {
    this.#consumers.endIterators();
    const final = this.getSnapshot();
    if (isEndedSnapshot(final)) this.#shell.settlement.settle(final);
  }

  #changed(): void {
    this.#snapshot = undefined;
    this.#batcher.request();
  }
}
