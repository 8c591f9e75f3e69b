/**
 * The half of the follower machine's rules that end or repair a request: failures and
 * their backoff, the integrity verdict, rebuilds and the final states. `FollowStep` (in
 * `follow-machine.ts`) adds the rules that start requests; the two meet in `next` and
 * `requestReplay`.
 */
import { backoffStep } from './backoff.js';
import type { EndedTurnStatus } from './domain.js';
import type { Failure } from './failure-policy.js';
import { abortAll, REPLAY_AFTER_CLOSES, REPLAY_AFTER_FAILURES } from './follow-state.js';
import type { FollowEffect, FollowEnv, FollowInput, FollowNotice, FollowState, ReplayCause } from './follow-types.js';
import { ProtocolError, TransportError, type LifelineError } from '../errors.js';

/**
 * One transition being computed: the state so far and the effects so far. A class only to
 * share the two between the small rules; it never outlives `transition`.
 */
export abstract class StepRules {
  effects: FollowEffect[] = [];
  constructor(
    public state: FollowState,
    readonly env: FollowEnv,
  ) {}

  /** Decides the main loop's next step from the state. */
  protected abstract next(): void;
  /** Aborts what runs and replays the log next. */
  protected abstract requestReplay(cause?: ReplayCause): void;

  protected set(patch: Partial<FollowState>): void {
    this.state = { ...this.state, ...patch };
  }
  protected do(...effects: FollowEffect[]): void {
    this.effects.push(...effects);
  }
  protected say(notice: FollowNotice): void {
    this.do({ kind: 'say', notice });
  }

  protected live(): 'pending' | 'streaming' {
    return this.state.hasEvents ? 'streaming' : 'pending';
  }

  /** A main-loop request failed: back off, re-read headers, rebuild, replay, or give up. */
  protected failed(failure: Failure, closed: boolean): void {
    const s = this.state;
    if (s.phase !== 'connecting' && s.phase !== 'streaming' && s.phase !== 'replaying') return;
    this.do({ kind: 'clear', timer: 'stall' });
    const scope = s.replay ? 'replay' : 'stream';
    if (!s.replay) {
      this.set({ cut: true });
      this.say({ type: 'disconnect', cause: failure.error });
    }
    if (failure.error.kind === 'protocol') this.say({ type: 'protocol-error', error: failure.error });
    switch (failure.disposition) {
      case 'retry': {
        const misses = s.progressed ? 0 : s.misses + 1;
        this.set({ misses });
        // Closed without turn.end more than once in a row, or failing again and again: ask the log.
        if (!s.replay && misses >= (closed ? REPLAY_AFTER_CLOSES : REPLAY_AFTER_FAILURES)) return this.requestReplay('failures');
        return this.retryLater(failure, scope);
      }
      case 'auth':
        // 401/403: the next request re-reads the headers (a refreshed token); a second one in a row is final.
        if (s.authRetried) break;
        this.set({ authRetried: true });
        this.say({ type: 'auth-refresh' });
        return this.next();
      case 'rebuild':
        return this.rebuild();
      case 'fatal':
        break;
    }
    this.fail(failure.error, scope);
  }

  /** Waits a backoff delay (the server's `retry:` is never used: our policy paces every retry). */
  protected retryLater(failure: Failure, scope: 'stream' | 'replay'): void {
    const s = this.state;
    const { now, random, config } = this.env;
    const hint = { afterHealthy: s.progressed, retryAfterMs: failure.retryAfterMs };
    const { state: backoff, delay } = backoffStep(config.retry, s.backoff, hint, now, random);
    this.set({ backoff });
    if (delay === undefined) return this.fail(new TransportError('retry_exhausted', 'retry.maxElapsedMs passed.', { cause: failure.error }), scope);
    // A replay keeps showing stalled or recovering while it retries.
    this.set({ phase: 'waiting', connection: 'waiting', nextRetryAt: now + delay, ...(!s.replay && { status: 'reconnecting' }) });
    this.say({ type: 'retry', scope, attempt: backoff.attempt, delayMs: delay, cause: failure.error });
    this.do({ kind: 'arm', timer: 'retry', ms: delay, fresh: true });
  }

  protected verified(input: Extract<FollowInput, { kind: 'verified' }>): void {
    const s = this.state;
    if (s.phase !== 'settling' || !s.following) return;
    if (input.matches) {
      this.do({ kind: 'fold' });
      this.say({ type: 'completed', status: input.status });
      return this.finish(input.status, undefined, false);
    }
    this.say({ type: 'integrity-mismatch', expectedLength: input.expectedLength, actualLength: input.actualLength });
    if (s.rebuilt) return this.fail(new ProtocolError('integrity_mismatch', 'Text still differs after a full replay.'), 'replay');
    this.set({ rebuilt: true });
    this.rebuild();
  }

  /** Throws the local copy away and replays the whole log. */
  protected rebuild(): void {
    this.do({ kind: 'discard' });
    this.set({ hasEvents: false, ended: false });
    this.requestReplay('rebuild');
  }

  protected fail(cause: LifelineError, scope: 'stream' | 'replay'): void {
    // Bad data and a turn the server no longer has stay failed; auth and network trouble may pass.
    const final = cause.kind === 'protocol' || [404, 410].includes(cause.status ?? 0);
    this.say({ type: 'failed', scope, error: cause });
    if (final) this.do({ kind: 'fold', error: cause });
    this.finish('failed', cause, !final);
  }

  protected finish(status: EndedTurnStatus, error: LifelineError | undefined, revivable: boolean): void {
    this.do(...abortAll(), { kind: 'leave' }, { kind: 'release' }, { kind: 'settle' });
    this.set({ phase: 'done', status, error, revivable, replay: false, alongside: false, connection: 'closed', nextRetryAt: undefined });
  }
}
