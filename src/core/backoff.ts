/**
 * Retry timing: capped exponential backoff with full jitter. Pure (`random` and `now` are
 * passed in), so its envelope can be property-tested.
 */
import { LifelineError } from '../errors.js';

/** Retry timing for reconnects, replays and submissions. */
export interface RetryOptions {
  /**
   * Random spread of the first reconnect after a healthy connection, ms. Default 10. A cut of
   * one healthy stream is a blip: beyond the reconnect itself (about 10 ms on localhost,
   * bench/resume.ts) this wait is what a resume costs. It exists for the herd: streams cut in
   * one instant (a balancer restarted, an instance drained) come back spread over it, 1 000
   * of them about 100 a millisecond (timers fire on whole milliseconds: no spread is finer
   * per tick), far under a listen backlog (511 in Node); serving 1 000 reconnects takes a
   * server much longer than any such window, so a wider one would delay every resume without
   * lightening that work. A server that went down refuses the first reconnect, and the
   * exponential steps after it (`initialDelayMs`, doubling) spread the herd further.
   */
  firstRetryJitterMs?: number;
  /** First backoff step, ms. Default 250. */
  initialDelayMs?: number;
  /** Cap of one backoff step, ms. Default 10 000. */
  maxDelayMs?: number;
  /** Multiplier per attempt. Default 2. */
  factor?: number;
  /** Give up (visibly) when retrying this long without progress, ms. Default 300 000 (5 min). */
  maxElapsedMs?: number;
  /** Largest `Retry-After` honoured, ms. Default 60 000. */
  maxRetryAfterMs?: number;
}

/** {@link RetryOptions} with every default filled in. */
export type RetryPolicy = Readonly<Required<RetryOptions>>;

/** Defaults documented on {@link RetryOptions}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  firstRetryJitterMs: 10,
  initialDelayMs: 250,
  maxDelayMs: 10_000,
  factor: 2,
  maxElapsedMs: 300_000,
  maxRetryAfterMs: 60_000,
};

/** Fills defaults and rejects nonsense (negative, NaN, factor < 1) with `invalid_argument`. */
export function resolveRetryPolicy(options: RetryOptions = {}): RetryPolicy {
  const policy: Record<string, number> = { ...DEFAULT_RETRY_POLICY };
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    // `!(value >= 0)` is also true for NaN.
    if (!(value >= (key === 'factor' ? 1 : 0))) throw new LifelineError('invalid_argument', `Invalid retry.${key}.`);
    policy[key] = value;
  }
  return policy as RetryPolicy;
}

/** What the caller knows about the failure it is about to retry. */
export interface RetryHint {
  /** The connection that just ended had delivered events: most cuts are blips, retry almost at once. */
  afterHealthy?: boolean;
  /** The server's `Retry-After`, ms. Honoured up to `maxRetryAfterMs`. (SSE `retry:` is never used: our policy paces every retry.) */
  retryAfterMs?: number | undefined;
}

/** A wait uniform in [0, `capMs`) (full jitter), or the server's `Retry-After` (up to `maxRetryAfterMs`) when that is longer. */
function jittered(policy: RetryPolicy, capMs: number, random: number, retryAfterMs = 0): number {
  return Math.max(Math.floor(random * capMs), Math.min(retryAfterMs, policy.maxRetryAfterMs));
}

/** The wait before exponential step `step` (1-based), whose cap is min(maxDelayMs, initialDelayMs × factor^(step − 1)). */
export function retryDelay(policy: RetryPolicy, step: number, random: number, retryAfterMs?: number): number {
  return jittered(policy, Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (step - 1)), random, retryAfterMs);
}

/** A retry loop's state as plain data (the follower's machine and `recover()`'s list hold it). */
export interface BackoffState {
  /** Failures since the last progress. */
  readonly attempt: number;
  /** Exponential steps taken (a first retry after a healthy connection takes none). */
  readonly step: number;
  /** When the first of these failures happened, epoch ms. */
  readonly startedAt: number;
}

/** A loop that has not failed yet (also what progress and a revive go back to). */
export const FRESH_BACKOFF: BackoffState = { attempt: 0, step: 0, startedAt: 0 };

/**
 * Counts one failure: the next state, and the delay before the next attempt, or
 * `undefined` when waiting it would pass `maxElapsedMs` since the first failure (give up).
 * Pure: `now` and `random` are passed in.
 */
export function backoffStep(
  policy: RetryPolicy,
  state: BackoffState,
  { afterHealthy, retryAfterMs }: RetryHint,
  now: number,
  random: number,
): { state: BackoffState; delay: number | undefined } {
  const attempt = state.attempt + 1;
  const startedAt = attempt === 1 ? now : state.startedAt;
  const healthyBlip = attempt === 1 && afterHealthy;
  const step = healthyBlip ? state.step : state.step + 1;
  const delay = healthyBlip ? jittered(policy, policy.firstRetryJitterMs, random, retryAfterMs) : retryDelay(policy, step, random, retryAfterMs);
  return { state: { attempt, step, startedAt }, delay: now + delay - startedAt > policy.maxElapsedMs ? undefined : delay };
}

/**
 * Parses `Retry-After` (delta seconds or an HTTP date) into ms from `now`; `undefined`
 * when absent or unparseable. Dates in the past become 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  const trimmed = value?.trim() ?? '';
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  // HTTP dates always name a weekday or month; bare numbers like `-5` are not dates.
  const date = /[a-z]/i.test(trimmed) ? Date.parse(trimmed) : NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
