/**
 * A tiny listener set. One listener throwing must never stop the others or the code
 * that emitted: the error is reported (like an event listener's) and emission goes on.
 */

/** Hooks called when the first listener arrives and the last one leaves. */
export interface EmitterHooks {
  onFirstSubscribe?: () => void;
  onLastUnsubscribe?: () => void;
}

/** A set of listeners of values of type `T`. */
export interface Emitter<T> {
  /** Adds `listener`; returns its unsubscribe (idempotent). Bound, so it can be passed around. */
  subscribe(listener: (value: T) => void): () => void;
  /** Calls every listener with `value`, isolating their errors. */
  emit(value: T): void;
  /** Number of listeners. */
  readonly size: number;
}

/** Reports a listener's error without throwing into the emitter. */
export function reportListenerError(error: unknown): void {
  const report = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof report === 'function') report(error);
  else console.error('lifeline: a listener threw', error);
}

/** Creates an {@link Emitter}. */
export function createEmitter<T>(hooks: EmitterHooks = {}): Emitter<T> {
  const listeners = new Set<(value: T) => void>();
  return {
    subscribe(listener) {
      // Wrapped so one function subscribed twice is two subscriptions, each ended by its own unsubscribe.
      const entry = (value: T): void => listener(value);
      listeners.add(entry);
      if (listeners.size === 1) hooks.onFirstSubscribe?.();
      return () => {
        if (!listeners.delete(entry)) return;
        if (listeners.size === 0) hooks.onLastUnsubscribe?.();
      };
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
    get size() {
      return listeners.size;
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
  let pending = false;
  let generation = 0;
  return {
    request() {
      if (pending) return;
      pending = true;
      const mine = generation;
      schedule(() => {
        if (mine !== generation) return;
        pending = false;
        run();
      });
    },
    cancel() {
      generation += 1;
      pending = false;
    },
  };
}
