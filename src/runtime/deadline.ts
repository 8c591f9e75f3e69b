/**
 * A request's time limit on the timers port (never `AbortSignal.timeout`, whose platform
 * timer a simulator's virtual time cannot drive): a signal that aborts with a
 * `TimeoutError` after `ms`, or with `signal`'s reason as soon as that aborts.
 */
import type { Timers } from '../ports/timers.js';

export interface Deadline {
  readonly signal: AbortSignal;
  /** Stops the timer (the request is over); the signal stays as it is. */
  clear(): void;
}

/** The name every request failure classifier reads as a timeout (core/failure-policy.ts). */
const timeoutError = (): Error => Object.assign(new Error('The request timed out.'), { name: 'TimeoutError' });

export function deadline(timers: Timers, ms: number, signal?: AbortSignal): Deadline {
  const timeout = new AbortController();
  const handle = timers.set(() => timeout.abort(timeoutError()), ms);
  return {
    signal: signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal,
    clear: () => timers.clear(handle),
  };
}
