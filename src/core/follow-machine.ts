/**
 * The follower's transition table: `transition(state, input, env)` answers the next state
 * and the effects to run, and does nothing else (no timers, no requests, no clock: `env`
 * brings time and randomness). The states, inputs and effects are listed in
 * `follow-types.ts`; the rules that end or repair requests are in `follow-rules.ts`.
 *
 * The per-event hot path never comes here: the runner applies events itself and reports
 * only an attempt's first progress, a gap, and the end.
 */
import { FRESH_BACKOFF } from './backoff.js';
import { abortAll, stallLimitMs } from './follow-state.js';
import { StepRules } from './follow-rules.js';
import type { FollowEnv, FollowInput, FollowState, ReplayCause, Transition } from './follow-types.js';
import { TransportError } from '../errors.js';

export { initialFollowState, stallLimitMs } from './follow-state.js';

/** Phases where the main loop has a request or a wait of its own going. */
const BUSY = new Set(['connecting', 'streaming', 'waiting', 'replaying', 'settling', 'watching']);

/** The main loop holds a stream attempt of its own (not a replay, not another tab's relay). */
export const streams = (s: FollowState): boolean => !s.replay && (s.phase === 'connecting' || s.phase === 'streaming');

/** The transition function. Inputs that mean nothing in the current state change nothing. */
export function transition(state: FollowState, input: FollowInput, env: FollowEnv): Transition {
  const step = new FollowStep(state, env);
  step.handle(input);
  return { state: step.state, effects: step.effects };
}

/** The rules that start requests and waits, and the dispatch of every input. */
class FollowStep extends StepRules {
  handle(input: FollowInput): void {
    const s = this.state;
    if (s.phase === 'done' && input.kind !== 'revive' && input.kind !== 'rebuild' && input.kind !== 'close' && input.kind !== 'start') return;
    switch (input.kind) {
      case 'restored':
        if (s.following) return;
        this.set({ hasEvents: input.hasEvents, ended: input.ended, status: input.hasEvents ? 'streaming' : 'pending' });
        if (input.final) this.finish(input.final.status, input.final.error, false);
        return;
      case 'start':
        if (s.phase === 'done') return this.set({ following: true });
        if (s.following) return input.replayFirst ? this.requestReplay('start') : undefined;
        this.set({ following: true });
        if (input.replayFirst) this.requestReplay();
        return this.next();
      case 'close':
        return this.#stop();
      case 'revive':
        if (s.phase !== 'done' || !s.revivable) return;
        // A revived turn gets a fresh retry budget (docs/faults.md row 37) and replays first.
        this.set({ phase: 'idle', following: false, revivable: false, error: undefined, authRetried: false, backoff: FRESH_BACKOFF, misses: 0 });
        this.do({ kind: 'unsettle' });
        return this.handle({ kind: 'start', replayFirst: true });
      case 'rebuild':
        // Only an ended turn this client verified; `rebuilt` makes a second difference a failure, not a loop.
        if (s.phase !== 'done' || s.error !== undefined) return;
        this.set({ phase: 'idle', following: false, revivable: false, authRetried: false, backoff: FRESH_BACKOFF, misses: 0, rebuilt: true, hasEvents: false, ended: false });
        this.do({ kind: 'unsettle' }, { kind: 'discard' });
        return this.handle({ kind: 'start', replayFirst: true });
      case 'online':
        this.set({ online: true });
        // Offline, or waiting out a backoff: try now (docs/faults.md row 18).
        if (s.phase === 'offline' || s.phase === 'waiting') return this.next();
        return;
      case 'offline':
        return this.set({ online: false });
      case 'role':
        this.set({ role: input.role });
        if (s.phase === 'watching' && input.role !== 'watcher') {
          this.do({ kind: 'clear', timer: 'stall' });
          return this.next();
        }
        return;
      case 'resume':
        // A stream that got data while the page was frozen is deaf after `resume`: reconnect now, said as a cut.
        if (!streams(s)) return;
        this.set({ cut: true });
        this.say({ type: 'disconnect', cause: new TransportError('network_error', input.drill ? 'Cut by client.drill.' : 'Page resumed from a freeze.') });
        this.do({ kind: 'abort', slot: 'main' });
        return this.next();
      case 'recover':
        return this.#recover();
      case 'opened':
        return this.#opened(input.lastEventId, input.heartbeatMs);
      case 'progress':
        return this.#progress(input.from, input.seq);
      case 'gap':
        return this.requestReplay('gap');
      case 'ended':
        this.set({ ended: true });
        // A replay page ends on its own (its answer follows); the integrity check runs once.
        if (!s.following || s.phase === 'replaying' || s.phase === 'settling' || s.phase === 'idle') return;
        this.do({ kind: 'abort', slot: 'main' }, { kind: 'clear', timer: 'stall' });
        return this.next();
      case 'no-content':
        return this.requestReplay('ended-stream');
      case 'failed':
        return input.slot === 'alongside' ? this.#alongsideFailed() : this.failed(input.failure, input.closed === true);
      case 'page':
        return input.slot === 'alongside' ? this.#alongsidePage(input.applied, input.more) : this.#page(input.applied, input.more);
      case 'timer':
        return this.#timer(input.timer, input.silentMs);
      case 'verified':
        return this.verified(input);
    }
  }

  /** Decides the main loop's next step from the state: the one place that starts requests and waits. */
  protected next(): void {
    const s = this.state;
    this.do({ kind: 'clear', timer: 'retry' });
    if (!s.following) return this.set({ phase: 'idle' });
    if (s.ended) {
      this.set({ phase: 'settling', nextRetryAt: undefined });
      this.do({ kind: 'clear', timer: 'stall' }, { kind: 'verify' });
      return;
    }
    if (!s.online) {
      this.set({ phase: 'offline', connection: 'offline', nextRetryAt: undefined });
      return this.do({ kind: 'clear', timer: 'stall' });
    }
    this.set({ progressed: false, nextRetryAt: undefined });
    if (s.role === 'watcher' && !s.replay) {
      this.set({ phase: 'watching', connection: 'idle' });
      return this.#watch();
    }
    if (s.replay) {
      this.set({ phase: 'replaying' });
      this.do({ kind: 'fetch-page', slot: 'main' });
    } else {
      this.set({ phase: 'connecting', connection: 'connecting' });
      this.do({ kind: 'open-stream' });
    }
    this.#watch();
  }

  /** Arms the stall watchdog afresh for the request (or relay) just started. */
  #watch(): void {
    this.do({ kind: 'arm', timer: 'stall', ms: stallLimitMs(this.state, this.env), fresh: true });
  }

  /** Ends every request and timer; the loop stays `idle` until started again. */
  #stop(): void {
    const s = this.state;
    if (!s.following && s.phase !== 'done') return;
    this.do(...abortAll(), { kind: 'leave' }, { kind: 'release' });
    this.set({ following: false, alongside: false, ...(s.phase !== 'done' && { phase: 'idle', connection: 'idle', nextRetryAt: undefined }) });
  }

  /** Aborts what runs and replays next: one path for stalls, gaps, 204, repeated failures, rebuilds and adoption. */
  protected requestReplay(cause?: ReplayCause): void {
    const s = this.state;
    if (!s.replay) {
      this.set({ replay: true, replayed: 0, misses: 0, cut: false, status: 'recovering', connection: 'idle' });
      this.say({ type: 'recovering' });
    }
    this.do({ kind: 'abort', slot: 'alongside' }, { kind: 'clear', timer: 'alongside' });
    this.set({ alongside: false });
    // From `start` the loop is started right after; otherwise restart it now.
    if (cause !== undefined && BUSY.has(s.phase)) {
      this.do({ kind: 'abort', slot: 'main' }, { kind: 'clear', timer: 'stall' });
      this.next();
    }
  }

  #opened(lastEventId: number, heartbeatMs: number | undefined): void {
    if (this.state.phase !== 'connecting') return;
    this.set({ phase: 'streaming', connection: 'open', authRetried: false, heartbeatMs: heartbeatMs ?? this.state.heartbeatMs, status: this.live() });
    this.say({ type: 'open', status: 200 });
    if (lastEventId) this.say({ type: 'resumed', fromSeq: lastEventId });
    // The announced heartbeat may shorten the watchdog: counted from the last sound heard.
    this.do({ kind: 'arm', timer: 'stall', ms: stallLimitMs(this.state, this.env) });
  }

  #progress(from: 'stream' | 'replay' | 'relay', seq: number): void {
    const s = this.state;
    this.set({ hasEvents: true, progressed: true, backoff: FRESH_BACKOFF });
    if (from === 'replay') return;
    this.set({ status: 'streaming' });
    // A resumed connection first delivers, in one burst, what was logged while we were away.
    if (from === 'stream' && s.cut && seq > 1) {
      this.set({ cut: false });
      this.say({ type: 'recovered', path: 'resume', events: 0 });
    }
  }

  #page(applied: number, more: boolean): void {
    const s = this.state;
    if (s.phase !== 'replaying') return;
    this.set({ replayed: s.replayed + applied, authRetried: false });
    if (more) {
      this.do({ kind: 'fetch-page', slot: 'main' });
      return this.#watch();
    }
    this.do({ kind: 'clear', timer: 'stall' });
    if (this.state.replayed) this.say({ type: 'recovered', path: 'replay', events: this.state.replayed });
    this.set({ replay: false, status: this.live(), connection: 'idle' });
    // An ended turn is released once settled, so `recover()` answers final snapshots.
    if (!this.state.ended) this.do({ kind: 'release' });
    this.next();
  }

  /** `recover()`: replays the log next to a healthy main loop; both merge by seq. */
  #recover(): void {
    const s = this.state;
    if (!s.following || s.replay || s.alongside || s.phase === 'settling') return this.do({ kind: 'release' });
    this.set({ alongside: true, alongsideReplayed: 0 });
    this.do({ kind: 'fetch-page', slot: 'alongside' }, { kind: 'arm', timer: 'alongside', ms: stallLimitMs(s, this.env), fresh: true });
  }

  #alongsidePage(applied: number, more: boolean): void {
    const s = this.state;
    if (!s.alongside) return;
    this.set({ alongsideReplayed: s.alongsideReplayed + applied });
    if (more) {
      this.do({ kind: 'fetch-page', slot: 'alongside' }, { kind: 'arm', timer: 'alongside', ms: stallLimitMs(s, this.env), fresh: true });
      return;
    }
    this.set({ alongside: false });
    this.do({ kind: 'clear', timer: 'alongside' });
    if (this.state.alongsideReplayed) this.say({ type: 'recovered', path: 'replay', events: this.state.alongsideReplayed });
    if (!this.state.ended) this.do({ kind: 'release' });
  }

  /** The alongside replay failed or hung: the main loop replays instead (backoff, budget, a visible give-up). */
  #alongsideFailed(): void {
    if (!this.state.alongside) return;
    this.requestReplay('alongside-failed');
  }

  #timer(timer: 'stall' | 'retry' | 'alongside', silentMs: number): void {
    const s = this.state;
    if (timer === 'retry') return s.phase === 'waiting' ? this.next() : undefined;
    if (timer === 'alongside') {
      if (!s.alongside) return;
      this.say({ type: 'stalled', watchdog: s.hasEvents ? 'idle' : 'first-event', silentMs });
      return this.#alongsideFailed();
    }
    if (s.phase !== 'connecting' && s.phase !== 'streaming' && s.phase !== 'replaying' && s.phase !== 'watching') return;
    const limit = stallLimitMs(s, this.env);
    // Events only stamp the time they were heard: the timer waits out the rest of the window.
    if (silentMs < limit) return this.do({ kind: 'arm', timer: 'stall', ms: limit - silentMs });
    this.say({ type: 'stalled', watchdog: s.hasEvents ? 'idle' : 'first-event', silentMs });
    if (s.phase === 'replaying') {
      // A replay page that hangs is a failure like any other: it counts against the retry budget.
      this.do({ kind: 'abort', slot: 'main' });
      this.set({ status: 'stalled' });
      return this.failed({ error: new TransportError('timeout', 'The replay request hung.'), disposition: 'retry' }, false);
    }
    this.requestReplay('stall');
    this.set({ status: 'stalled' });
  }
}
