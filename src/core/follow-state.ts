/**
 * The follower machine's starting state, what the app sees of it (derived, never stored:
 * one source for `status` and `connection`), and the numbers its rules read: watchdog
 * sizes and how many failed attempts send the loop to the log.
 */
import { FRESH_BACKOFF } from './backoff.js';
import type { ConnectionState, TurnStatus } from './domain.js';
import type { FollowEffect, FollowEnv, FollowRegions, FollowState, LoopPhase } from './follow-types.js';
import type { LifelineError } from '../errors.js';

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

/** The stream way, nothing counted yet (also where a finished replay hands back to). */
export const STREAM_MODE = { via: 'stream', misses: 0, cut: false } as const;

/** A follower before `start`. */
export function initialFollowState(): FollowState {
  return {
    phase: 'idle',
    mode: STREAM_MODE,
    role: 'solo',
    online: true,
    seen: 'nothing',
    alongside: undefined,
    backoff: FRESH_BACKOFF,
    progressed: false,
    authRetried: false,
    rebuilt: false,
    heartbeatMs: undefined,
  };
}

/** `state`'s regions in phase `next`: the data of the phase left behind goes with it. */
export function enter(state: FollowState, next: LoopPhase): FollowState {
  const { mode, role, online, seen, alongside, backoff, progressed, authRetried, rebuilt, heartbeatMs } = state;
  const regions: FollowRegions = { mode, role, online, seen, alongside, backoff, progressed, authRetried, rebuilt, heartbeatMs };
  return { ...regions, ...next };
}

/**
 * The status the app sees. `reconnecting` while a stream retry waits or is under way (failures
 * counted since the last event); a replay shows `recovering`, or `stalled` when a watchdog
 * sent it there; otherwise `pending` until the first event, then `streaming`.
 */
export function statusOf(state: FollowState): TurnStatus {
  if (state.phase === 'done') return state.status;
  if (state.mode.via === 'replay') return state.mode.stalled ? 'stalled' : 'recovering';
  const retrying = state.phase === 'waiting' || ((state.phase === 'connecting' || state.phase === 'offline') && state.backoff.attempt > 0);
  if (retrying) return 'reconnecting';
  return state.seen === 'nothing' ? 'pending' : 'streaming';
}

/**
 * The stream connection as the app sees it: only a stream request is `connecting` or `open`;
 * a replay that retries after failures stays `waiting` while its next page is out too.
 */
export function connectionOf(state: FollowState): ConnectionState {
  switch (state.phase) {
    case 'replaying':
      return state.backoff.attempt > 0 ? 'waiting' : 'idle';
    case 'connecting':
      return 'connecting';
    case 'streaming':
      return 'open';
    case 'waiting':
      return 'waiting';
    case 'offline':
      return 'offline';
    case 'done':
      return 'closed';
    default:
      return 'idle';
  }
}

/** The main loop holds a stream attempt of its own (not a replay, not another tab's relay). */
export function streams(state: FollowState): boolean {
  return state.phase === 'connecting' || state.phase === 'streaming';
}

/** When the retry timer fires (monotonic ms), while `waiting`. */
export function retryAtOf(state: FollowState): number | undefined {
  return state.phase === 'waiting' ? state.retryAt : undefined;
}

/** The failure the follower's own error ends in (a bug in its handling, docs/faults.md row 45): done, not revivable. */
export function crashedState(state: FollowState, error: LifelineError): FollowState {
  return { ...enter(state, { phase: 'done', status: 'failed', error, revivable: false }), mode: STREAM_MODE, alongside: undefined };
}

/**
 * Silence the stall watchdog allows, ms: the app's setting when it gave one, else 2.5
 * times the heartbeat the server announced (at least 2 s, at most 75 s), else the defaults.
 */
export function stallLimitMs(state: FollowState, env: FollowEnv): number {
  const heard = state.seen !== 'nothing';
  const own = heard ? env.config.idleMs : env.config.firstEventMs;
  if (own !== undefined) return own;
  if (state.heartbeatMs !== undefined) return Math.max(MIN_STALL_MS, HEARTBEAT_FACTOR * Math.min(state.heartbeatMs, MAX_HEARTBEAT_MS));
  return heard ? DEFAULT_IDLE_MS : DEFAULT_FIRST_EVENT_MS;
}

/** Every request aborted, every timer cleared: no state is left waiting on something that will not come. */
export function abortAll(): FollowEffect[] {
  return [
    { kind: 'abort', slot: 'main' },
    { kind: 'abort', slot: 'alongside' },
    { kind: 'clear', timer: 'stall' },
    { kind: 'clear', timer: 'retry' },
    { kind: 'clear', timer: 'alongside' },
  ];
}
