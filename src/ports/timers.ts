/**
 * The client's timers. `set` never overflows and never spins: a delay is clamped to ≥ 0
 * (NaN counts as 0), `Infinity` never fires, and a delay past what one platform timer
 * holds (2^31 − 1 ms; past it `setTimeout` fires at once) is waited in steps.
 */
export interface Timers {
  /** Calls `fn` once after `ms` (see above), never synchronously; the handle is for {@link Timers.clear}. */
  set(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer (a fired or cleared one, or `undefined`: nothing). */
  clear(handle: TimerHandle | undefined): void;
}

/** Opaque: only {@link Timers.clear} of the same timers reads it. */
export type TimerHandle = { readonly timer: true };

/** Longest delay one `setTimeout` keeps. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay a timer can wait: ≥ 0, `Infinity` kept (never). */
export const clampDelay = (ms: number): number => (ms > 0 ? ms : 0);

type RealHandle = TimerHandle & { id?: ReturnType<typeof setTimeout> };

/** `setTimeout`/`clearTimeout`, looked up on every call (SSR-safe; fake timers apply). */
export const realTimers: Timers = {
  set(fn, ms) {
    const handle: RealHandle = { timer: true };
    const arm = (left: number): void => {
      if (left === Infinity) return;
      const step = Math.min(left, MAX_TIMER_MS);
      handle.id = setTimeout(() => (left > step ? arm(left - step) : fn()), step);
    };
    arm(clampDelay(ms));
    return handle;
  },
  clear(handle) {
    clearTimeout((handle as RealHandle | undefined)?.id);
  },
};
