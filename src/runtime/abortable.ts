/**
 * Every promise the API hands out settles at once after `dispose()` (docs/faults.md row 44), even
 * when what it waits on (a store that never answers, a request) would not.
 */
import { onAbort } from './on-abort.js';

/** `promise`, or a rejection with `signal`'s reason as soon as it aborts; a later outcome of `promise` is dropped. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const stop = onAbort(signal, () => reject(signal.reason));
    promise.then(resolve, reject).finally(stop);
  });
}
