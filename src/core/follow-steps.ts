/**
 * The steps the follower's transition table (`follow-machine.ts`) is written in: the main
 * loop's next move, the one road to the log, failures and their backoff, the integrity
 * verdict and the final states. Each works on one {@link Step}: the state so far and the
 * effects so far, alive only while `transition` computes.
 */
import { backoffStep, FRESH_BACKOFF } from './backoff.js';
import type { EndedTurnStatus } from './domain.js';
import { retryExhausted, type Failure } from './failure-policy.js';
import { abortAll, enter, REPLAY_AFTER_CLOSES, REPLAY_AFTER_FAILURES, stallLimitMs, STREAM_MODE } from './follow-state.js';
import type { FollowEffect, FollowEnv, FollowInput, FollowNotice, FollowRegions, FollowState, LoopPhase, ReplayCause } from './follow-types.js';
import { ProtocolError, type LifelineError } from '../errors.js';

export interface Step {
  state: FollowState;
  readonly effects: FollowEffect[];
  readonly env: FollowEnv;
}

/** Changes regions; the phase and its data stay. */
export function set(step: Step, patch: Partial<FollowRegions>): void {
  step.state = { ...step.state, ...patch };
}

/** Moves to phase `next` (the old phase's data goes). */
export function go(step: Step, next: LoopPhase): void {
  step.state = enter(step.state, next);
}

export function run(step: Step, ...effects: FollowEffect[]): void {
  step.effects.push(...effects);
}

export function say(step: Step, notice: FollowNotice): void {
  run(step, { kind: 'say', notice });
}

/** Phases where the main loop has a request or a wait of its own going (a replay asked for there restarts it). */
const BUSY = new Set(['connecting', 'streaming', 'waiting', 'replaying', 'settling', 'watching']);

/** Decides the main loop's next step from the state: the one place that starts requests and waits. */
export function next(step: Step): void {
  const s = step.state;
  run(step, { kind: 'clear', timer: 'retry' });
  if (s.seen === 'end') return go(step, { phase: 'settling' }), run(step, { kind: 'clear', timer: 'stall' }, { kind: 'verify' });
  if (!s.online) return go(step, { phase: 'offline' }), run(step, { kind: 'clear', timer: 'stall' });
  set(step, { progressed: false });
  if (s.role === 'watcher' && s.mode.via === 'stream') go(step, { phase: 'watching' });
  else if (s.mode.via === 'replay') go(step, { phase: 'replaying' }), run(step, { kind: 'fetch-page', slot: 'main' });
  else go(step, { phase: 'connecting' }), run(step, { kind: 'open-stream' });
  watch(step);
}

/** Arms the stall watchdog afresh for the request (or relay) just started. */
export function watch(step: Step): void {
  run(step, { kind: 'arm', timer: 'stall', ms: stallLimitMs(step.state, step.env), fresh: true });
}

/** Ends every request and timer; the loop stays `idle` until started again (a `done` turn stays done). */
export function stop(step: Step): void {
  const s = step.state;
  if (s.phase === 'idle') return;
  run(step, ...abortAll(), { kind: 'leave' }, { kind: 'release' });
  set(step, { alongside: undefined });
  if (s.phase !== 'done') go(step, { phase: 'idle' });
}

/**
 * Aborts what runs and replays next: the one road to the log, for stalls, gaps, 204,
 * repeated failures, rebuilds and adoption. Without a `cause` (a `start` that replays
 * first) the caller starts the loop itself.
 */
export function requestReplay(step: Step, cause?: ReplayCause): void {
  const s = step.state;
  if (s.mode.via !== 'replay') {
    set(step, { mode: { via: 'replay', replayed: 0, stalled: false } });
    say(step, { type: 'recovering' });
  }
  run(step, { kind: 'abort', slot: 'alongside' }, { kind: 'clear', timer: 'alongside' });
  set(step, { alongside: undefined });
  if (cause !== undefined && BUSY.has(s.phase)) {
    run(step, { kind: 'abort', slot: 'main' }, { kind: 'clear', timer: 'stall' });
    next(step);
  }
}

/** A watchdog fired on the replay (or sent the loop to it): the app sees `stalled` until it ends. */
export function markStalled(step: Step): void {
  const { mode } = step.state;
  if (mode.via === 'replay') set(step, { mode: { ...mode, stalled: true } });
}

/** A main-loop request failed: back off, re-read headers, rebuild, replay, or give up. */
export function failed(step: Step, failure: Failure, closed: boolean): void {
  const s = step.state;
  run(step, { kind: 'clear', timer: 'stall' });
  const scope = s.mode.via;
  if (s.mode.via === 'stream') {
    set(step, { mode: { ...s.mode, cut: true } });
    say(step, { type: 'disconnect', cause: failure.error });
  }
  if (failure.error.kind === 'protocol') say(step, { type: 'protocol-error', error: failure.error });
  switch (failure.disposition) {
    case 'retry': {
      if (s.mode.via === 'stream') {
        const misses = s.progressed ? 0 : s.mode.misses + 1;
        set(step, { mode: { via: 'stream', misses, cut: true } });
        // Closed without turn.end more than once in a row, or failing again and again: ask the log.
        if (misses >= (closed ? REPLAY_AFTER_CLOSES : REPLAY_AFTER_FAILURES)) return requestReplay(step, 'failures');
      }
      return retryLater(step, failure, scope);
    }
    case 'auth':
      // 401/403: the next request re-reads the headers (a refreshed token); a second one in a row is final.
      if (s.authRetried) break;
      set(step, { authRetried: true });
      say(step, { type: 'auth-refresh' });
      return next(step);
    case 'rebuild':
      return rebuild(step);
    case 'fatal':
      break;
  }
  fail(step, failure.error, scope);
}

/** Waits a backoff delay (the server's `retry:` is never used: our policy paces every retry). */
function retryLater(step: Step, failure: Failure, scope: 'stream' | 'replay'): void {
  const s = step.state;
  const { now, random, config } = step.env;
  const hint = { afterHealthy: s.progressed, retryAfterMs: failure.retryAfterMs };
  const { state: backoff, delay } = backoffStep(config.retry, s.backoff, hint, now, random);
  set(step, { backoff });
  if (delay === undefined) return fail(step, retryExhausted(failure.error), scope);
  go(step, { phase: 'waiting', retryAt: now + delay });
  say(step, { type: 'retry', scope, attempt: backoff.attempt, delayMs: delay, cause: failure.error });
  run(step, { kind: 'arm', timer: 'retry', ms: delay, fresh: true });
}

/** The integrity check answered: the turn is done, or rebuilt once, or (still differing) failed. */
export function verified(step: Step, input: Extract<FollowInput, { kind: 'verified' }>): void {
  if (input.matches) {
    run(step, { kind: 'fold' });
    say(step, { type: 'completed', status: input.status });
    return finish(step, input.status, undefined, false);
  }
  say(step, { type: 'integrity-mismatch', expectedLength: input.expectedLength, actualLength: input.actualLength });
  if (step.state.rebuilt) return fail(step, new ProtocolError('integrity_mismatch', 'Text still differs after a full replay.'), 'replay');
  set(step, { rebuilt: true });
  rebuild(step);
}

/** Throws the local copy away and replays the whole log. */
export function rebuild(step: Step): void {
  run(step, { kind: 'discard' });
  set(step, { seen: 'nothing' });
  requestReplay(step, 'rebuild');
}

/** A `done` turn followed again from `idle` with a fresh retry budget (docs/faults.md row 37); the caller starts it. */
export function reopen(step: Step): void {
  go(step, { phase: 'idle' });
  set(step, { authRetried: false, backoff: FRESH_BACKOFF, mode: STREAM_MODE });
  run(step, { kind: 'unsettle' });
}

export function fail(step: Step, cause: LifelineError, scope: 'stream' | 'replay'): void {
  // Bad data and a turn the server no longer has stay failed; auth and network trouble may pass.
  const final = cause.kind === 'protocol' || [404, 410].includes(cause.status ?? 0);
  say(step, { type: 'failed', scope, error: cause });
  if (final) run(step, { kind: 'fold', error: cause });
  finish(step, 'failed', cause, !final);
}

export function finish(step: Step, status: EndedTurnStatus, error: LifelineError | undefined, revivable: boolean): void {
  run(step, ...abortAll(), { kind: 'leave' }, { kind: 'release' }, { kind: 'settle' });
  go(step, { phase: 'done', status, error, revivable });
  set(step, { mode: STREAM_MODE, alongside: undefined });
}
