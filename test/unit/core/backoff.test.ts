import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffStep,
  DEFAULT_RETRY_POLICY,
  FRESH_BACKOFF,
  parseRetryAfter,
  resolveRetryPolicy,
  type RetryHint,
  type RetryPolicy,
} from '../../../src/core/backoff.js';
import { isLifelineError } from '../../../src/errors.js';

const policyArb = fc.record({
  firstRetryJitterMs: fc.integer({ min: 0, max: 500 }),
  initialDelayMs: fc.integer({ min: 1, max: 2_000 }),
  maxDelayMs: fc.integer({ min: 1, max: 60_000 }),
  factor: fc.double({ min: 1, max: 4, noNaN: true }),
  maxElapsedMs: fc.integer({ min: 0, max: 1_000_000 }),
  maxRetryAfterMs: fc.integer({ min: 0, max: 120_000 }),
});

/** A retry loop over the pure step, holding its state as `recover()`'s list and the follower's machine do. */
function createBackoff(policy: RetryPolicy, clock: { random: () => number; now: () => number }) {
  let state = FRESH_BACKOFF;
  return {
    get attempt() {
      return state.attempt;
    },
    reset() {
      state = FRESH_BACKOFF;
    },
    next(hint: RetryHint = {}) {
      const result = backoffStep(policy, state, hint, clock.now(), clock.random());
      state = result.state;
      return result.delay;
    },
  };
}

describe('backoff', () => {
  it('stays inside its envelope for any policy, randomness and hints', () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.array(
          fc.record({
            random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
            afterHealthy: fc.boolean(),
            retryAfterMs: fc.option(fc.integer({ min: 0, max: 500_000 }), { nil: undefined }),
            elapse: fc.integer({ min: 0, max: 20_000 }),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        (options, steps) => {
          const policy = resolveRetryPolicy(options);
          let now = 1_000;
          let random = 0;
          const backoff = createBackoff(policy, { random: () => random, now: () => now });
          const start = now;
          let step = 0;
          for (const [index, input] of steps.entries()) {
            random = input.random;
            const hint = {
              afterHealthy: input.afterHealthy,
              ...(input.retryAfterMs === undefined ? {} : { retryAfterMs: input.retryAfterMs }),
            };
            const delay = backoff.next(hint);
            expect(backoff.attempt).toBe(index + 1);
            const fast = index === 0 && input.afterHealthy;
            if (!fast) step += 1;
            const retryAfter = input.retryAfterMs === undefined ? 0 : Math.min(input.retryAfterMs, policy.maxRetryAfterMs);
            const cap = fast ? policy.firstRetryJitterMs : Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (step - 1));
            if (delay === undefined) {
              // Gives up only when waiting would pass maxElapsedMs.
              expect(now + Math.max(Math.floor(input.random * cap), retryAfter) - start).toBeGreaterThan(policy.maxElapsedMs);
              return;
            }
            expect(delay).toBeGreaterThanOrEqual(retryAfter);
            expect(delay).toBeLessThanOrEqual(Math.max(cap, retryAfter));
            expect(delay).toBeLessThanOrEqual(Math.max(policy.maxDelayMs, policy.firstRetryJitterMs, policy.maxRetryAfterMs));
            expect(now + delay - start).toBeLessThanOrEqual(policy.maxElapsedMs);
            now += delay + input.elapse;
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('retries the first failure after a healthy connection within the small spread, then doubles', () => {
    const backoff = createBackoff(DEFAULT_RETRY_POLICY, { random: () => 0.999, now: () => 0 });
    expect(backoff.next({ afterHealthy: true })).toBe(9);
    expect(backoff.next()).toBe(249);
    expect(backoff.next()).toBe(499);
    expect(backoff.next()).toBe(999);
    backoff.reset();
    expect(backoff.attempt).toBe(0);
    expect(backoff.next()).toBe(249);
  });

  it('caps steps at maxDelayMs', () => {
    const backoff = createBackoff(DEFAULT_RETRY_POLICY, { random: () => 0.999, now: () => 0 });
    for (let i = 0; i < 20; i++) backoff.next();
    expect(backoff.next()).toBe(9_990);
  });

  it('gives up once maxElapsedMs would pass', () => {
    let now = 0;
    const backoff = createBackoff(resolveRetryPolicy({ maxElapsedMs: 1_000 }), { random: () => 0.5, now: () => now });
    expect(backoff.next()).toBe(125);
    now = 990;
    expect(backoff.next()).toBeUndefined();
  });

  it('rejects nonsense options with a usage error', () => {
    for (const bad of [{ initialDelayMs: -1 }, { factor: 0.5 }, { maxDelayMs: Number.NaN }]) {
      try {
        resolveRetryPolicy(bad);
        expect.unreachable();
      } catch (error) {
        expect(isLifelineError(error) && error.code).toBe('invalid_argument');
      }
    }
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3', 0)).toBe(3_000);
    expect(parseRetryAfter(' 0 ', 0)).toBe(0);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter(new Date(0).toUTCString(), 4_000)).toBe(0);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter('-5', 0)).toBeUndefined();
    expect(parseRetryAfter(null, 0)).toBeUndefined();
  });
});
