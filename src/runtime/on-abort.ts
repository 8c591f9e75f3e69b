/**
 * One `abort` listener per signal, however many waits hang on it. A client's lifetime
 * signal is shared by all of its sleeps and bounded waits, and Node warns
 * (`MaxListenersExceededWarning`) past ten listeners on one signal: a client in Node with
 * a dozen turns backing off, or an app calling `recover()` often, reached that with no
 * leak at all (the simulator printed it in every full run).
 */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `callback` once when `signal` aborts (the caller checked it has not yet); answers the function that stops waiting. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let callbacks = waiting.get(signal);
  if (!callbacks) {
    const registered = new Set<() => void>();
    waiting.set(signal, (callbacks = registered));
    // A signal aborts once, so the listener runs once.
    signal.addEventListener('abort', () => registered.forEach((call) => call()));
  }
  const own = callbacks.add(callback);
  return () => void own.delete(callback);
}
