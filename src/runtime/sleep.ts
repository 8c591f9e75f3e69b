/**
 * The client's one way to wait: a timer that an `AbortSignal` ends early. Loops use the
 * answer to tell "time to look again" from "stop": it never rejects, so an abort needs no
 * try/catch and cannot leave an unhandled rejection behind.
 */
import { realTimers, type Timers } from '../ports/timers.js';
import { onAbort } from './on-abort.js';

/**
 * Resolves `true` once `ms` have passed on `timers`, or `false` as soon as `signal` aborts
 * (at once when it already has). `Infinity` waits for the signal alone; the timers port
 * waits longer delays than one platform timer holds in steps, and clamps negative ones to 0.
 */
export function sleep(ms: number, signal?: AbortSignal, timers: Timers = realTimers): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const end = (elapsed: boolean): void => {
      timers.clear(timer);
      stop?.();
      resolve(elapsed);
    };
    const stop = signal && onAbort(signal, () => end(false));
    const timer = timers.set(() => end(true), ms);
  });
}
