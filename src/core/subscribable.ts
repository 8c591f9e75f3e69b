/**
 * A tiny listener set. One listener throwing must never stop the others or the code
 * that emitted: the error is reported (like an event listener's) and emission goes on.
 */

/** A set of listeners of values of type `T`. */
export interface Emitter<T> {
  /** Adds `listener`; returns its unsubscribe (idempotent). Bound, so it can be passed around. */
  subscribe(listener: (value: T) => void): () => void;
  /** Calls every listener with `value`, isolating their errors. */
  emit(value: T): void;
}

/** Reports a listener's error without throwing into the emitter. */
function reportListenerError(error: unknown): void {
  (globalThis.reportError ?? console.error)(error);
}

/** Creates an {@link Emitter}. */
export function createEmitter<T>(): Emitter<T> {
  const listeners = new Set<(value: T) => void>();
  return {
    subscribe(listener) {
      // Wrapped so one function subscribed twice is two subscriptions, each ended by its own unsubscribe.
      const entry = (value: T): void => listener(value);
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    emit(value) {
      for (const listener of listeners) {
        try {
          listener(value);
        } catch (error) {
          reportListenerError(error);
        }
      }
    },
  };
}

/**
 * Coalesces many `request()` calls into one `run` per scheduled tick: subscribers hear
 * about a burst of events once, not once per event.
 */
export interface Batcher {
  request(): void;
  /** Drops a pending run (dispose). */
  cancel(): void;
}

/** `schedule` decides the tick (a microtask, an animation frame, …). */
export function createBatcher(run: () => void, schedule: (callback: () => void) => void): Batcher {
  // The pending tick's token; a cancelled or finished tick no longer matches.
  let pending: object | undefined;
  return {
    request() {
      if (pending) return;
      const mine = (pending = {});
      schedule(() => {
        if (mine !== pending) return;
        pending = undefined;
        run();
      });
    },
    cancel() {
      pending = undefined;
    },
  };
}
