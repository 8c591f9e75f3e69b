/**
 * The client's clock. Two readings, never mixed: `now()` is monotonic (it never jumps when
 * the user or NTP sets the wall clock) and measures every duration and schedules every
 * wait; `wallNow()` is epoch ms and is used only for what is stored or shown (row times,
 * diagnostics' `at`, `Retry-After` dates, leases shared with other tabs).
 */
export interface Clock {
  /** Monotonic ms (any origin): every duration, deadline and schedule. */
  now(): number;
  /** Epoch ms: only what is stored or shown. */
  wallNow(): number;
}

/** `performance.now()` and `Date.now()`, looked up on every call (SSR-safe; fake timers apply). */
export const realClock: Clock = {
  now: () => globalThis.performance?.now() ?? Date.now(),
  wallNow: () => Date.now(),
};

/** A monotonic reading `at` as epoch ms, by the clock's present offset (for display). */
export const wallTime = (clock: Clock, at: number): number => clock.wallNow() + (at - clock.now());
