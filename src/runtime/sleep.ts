/**
 * The client's one way to wait: a timer that an `AbortSignal` ends early. Loops use the
 * answer to tell "time to look again" from "stop": it never rejects, so an abort needs no
 * try/catch and cannot leave an unhandled rejection behind.
 */

/** Longest delay one `setTimeout` keeps: past 2^31 − 1 ms it fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves `true` once `ms` have passed, or `false` as soon as `signal` aborts (at once
 * when it already has). `Infinity` waits for the signal alone; longer delays than one
 * timer holds are waited in steps.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const end = (elapsed: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      resolve(elapsed);
    };
    const stop = (): void => end(false);
    const arm = (left: number): void => {
      if (left < Infinity) timer = setTimeout(() => (left > MAX_TIMER_MS ? arm(left - MAX_TIMER_MS) : end(true)), Math.min(Math.max(left, 0), MAX_TIMER_MS));
    };
    signal?.addEventListener('abort', stop, { once: true });
    arm(ms);
  });
}
