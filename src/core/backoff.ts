/**
 * Retry timing: capped exponential backoff with full jitter. Pure apart from the
 * injected `random` and `now`, so its envelope can be property-tested.
 */
import { LifelineError } from '../errors.js';
import type { RetryOptions } from '../types.js';

/** {@link RetryOptions} with every default filled in. */
export type RetryPolicy = Readonly<Required<RetryOptions>>;

/** Defaults documented on {@link RetryOptions}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  firstRetryJitterMs: 100,
  initialDelayMs: 250,
  maxDelayMs: 10_000,
  factor: 2,
  maxElapsedMs: 300_000,
  maxRetryAfterMs: 60_000,
});

/** Fills defaults and rejects nonsense (negative, NaN, factor < 1) with a usage error. */
export function resolveRetryPolicy(options: RetryOptions = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(options) };
  for (const [key, value] of Object.entries(policy)) {
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
      throw new LifelineError('invalid_argument', `retry.${key} must be a number ≥ 0, got ${String(value)}.`);
    }
  }
  if (policy.factor < 1) throw new LifelineError('invalid_argument', `retry.factor must be ≥ 1, got ${policy.factor}.`);
  return Object.freeze(policy);
}

function stripUndefined(options: RetryOptions): RetryOptions {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(options)) if (value !== undefined) out[key] = value as number;
  return out as RetryOptions;
}

/** What the caller knows about the failure it is about to retry. */
export interface RetryHint {
  /** The connection that just ended had delivered events: most cuts are blips, retry almost at once. */
  afterHealthy?: boolean;
  /** The server's `Retry-After`, ms. Honoured up to `maxRetryAfterMs`. */
  retryAfterMs?: number;
  /**
   * The reconnection time the server asked for (SSE `retry:`): used as the first
   * exponential step instead of `initialDelayMs`, clamped to [initialDelayMs, maxDelayMs]
   * so a hostile value can neither cause a hot loop nor stall the client.
   */
  baseDelayMs?: number;
}

/** One retry loop's state. */
export interface Backoff {
  /**
   * Counts a failure and answers the delay before the next attempt, or `undefined`
   * when waiting it would pass `maxElapsedMs` since the first failure (give up).
   */
  next(hint?: RetryHint): number | undefined;
  /** Progress was made: the next failure starts a fresh loop. */
  reset(): void;
  /** Failures since the last reset. */
  readonly attempt: number;
}

/** Injectable sources of randomness and time. */
export interface BackoffClock {
  /** Uniform in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Epoch ms. Default `Date.now`. */
  now?: () => number;
}

/**
 * The delay of exponential step `step` (1-based) with full jitter:
 * uniform in [0, min(maxDelayMs, initialDelayMs · factor^(step-1))).
 */
export function jitteredDelay(policy: RetryPolicy, step: number, random: () => number, baseDelayMs?: number): number {
  return Math.floor(random() * exponentialCap(policy, step, baseDelayMs));
}

/** Upper bound of step `step`'s delay; `baseDelayMs` replaces `initialDelayMs` within the policy's bounds. */
export function exponentialCap(policy: RetryPolicy, step: number, baseDelayMs?: number): number {
  const base =
    baseDelayMs === undefined || !Number.isFinite(baseDelayMs)
      ? policy.initialDelayMs
      : Math.min(policy.maxDelayMs, Math.max(policy.initialDelayMs, baseDelayMs));
  return Math.min(policy.maxDelayMs, base * policy.factor ** Math.max(0, step - 1));
}

/** Creates a retry loop following `policy`. */
export function createBackoff(policy: RetryPolicy, clock: BackoffClock = {}): Backoff {
  const random = clock.random ?? Math.random;
  const now = clock.now ?? Date.now;
  let attempt = 0;
  let step = 0;
  let startedAt = 0;
  return {
    get attempt() {
      return attempt;
    },
    reset() {
      attempt = 0;
      step = 0;
    },
    next(hint = {}) {
      attempt += 1;
      if (attempt === 1) startedAt = now();
      let delay: number;
      if (attempt === 1 && hint.afterHealthy === true) {
        delay = Math.floor(random() * policy.firstRetryJitterMs);
      } else {
        step += 1;
        delay = jitteredDelay(policy, step, random, hint.baseDelayMs);
      }
      if (hint.retryAfterMs !== undefined) delay = Math.max(delay, Math.min(hint.retryAfterMs, policy.maxRetryAfterMs));
      if (now() + delay - startedAt > policy.maxElapsedMs) return undefined;
      return delay;
    },
  };
}

/**
 * Parses `Retry-After` (delta seconds or an HTTP date) into ms from `now`; `undefined`
 * when absent or unparseable. Negative answers (dates in the past) become 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^[0-9]{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  // HTTP dates always name a weekday or month; bare numbers like `-5` are not dates.
  if (!/[A-Za-z]/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
