/**
 * The follower machine's starting state and the numbers its rules read: watchdog sizes
 * and how many failed attempts send the loop to the log.
 */
import { FRESH_BACKOFF } from './backoff.js';
import type { FollowEffect, FollowEnv, FollowState, RequestSlot } from './follow-types.js';

/** Default watchdogs when neither the app nor the server said otherwise, ms. */
export const DEFAULT_FIRST_EVENT_MS = 15_000;
export const DEFAULT_IDLE_MS = 25_000;
/** The watchdog is this many announced heartbeat intervals (docs/protocol.md section 2)… */
export const HEARTBEAT_FACTOR = 2.5;
/** …but never shorter than this, ms. */
export const MIN_STALL_MS = 2_000;
/**
 * …nor sized to an interval longer than this, ms. docs/protocol.md section 2 sets no upper
 * bound on `Lifeline-Heartbeat`: a server announcing days would leave a silent stream unnoticed
 * for days. Three times the protocol's default interval (10 000) still honours a slow server.
 */
export const MAX_HEARTBEAT_MS = 30_000;
/** Stream attempts in a row without an event after which the log is asked instead (closes: fewer). */
export const REPLAY_AFTER_FAILURES = 3;
export const REPLAY_AFTER_CLOSES = 2;

/** A follower before `start`. */
export function initialFollowState(): FollowState {
  return {
    phase: 'idle',
    following: false,
    role: 'solo',
    online: true,
    replay: false,
    alongside: false,
    ended: false,
    hasEvents: false,
    progressed: false,
    misses: 0,
    cut: false,
    authRetried: false,
    rebuilt: false,
    heartbeatMs: undefined,
    replayed: 0,
    alongsideReplayed: 0,
    backoff: FRESH_BACKOFF,
    status: 'pending',
    connection: 'idle',
    nextRetryAt: undefined,
    revivable: false,
    error: undefined,
  };
}

/**
 * Silence the stall watchdog allows, ms: the app's setting when it gave one, else 2.5
 * times the heartbeat the server announced (at least 2 s, at most 75 s), else the defaults.
 */
export function stallLimitMs(state: FollowState, env: FollowEnv): number {
  const own = state.hasEvents ? env.config.idleMs : env.config.firstEventMs;
  if (own !== undefined) return own;
  if (state.heartbeatMs !== undefined) return Math.max(MIN_STALL_MS, HEARTBEAT_FACTOR * Math.min(state.heartbeatMs, MAX_HEARTBEAT_MS));
  return state.hasEvents ? DEFAULT_IDLE_MS : DEFAULT_FIRST_EVENT_MS;
}

/** Every request aborted, every timer cleared: no state is left waiting on something that will not come. */
export function abortAll(): FollowEffect[] {
  const slots: RequestSlot[] = ['main', 'alongside'];
  return [...slots.map((slot): FollowEffect => ({ kind: 'abort', slot })), ...(['stall', 'retry', 'alongside'] as const).map((timer): FollowEffect => ({ kind: 'clear', timer }))];
}
