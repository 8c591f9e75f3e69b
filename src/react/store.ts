'use client';
import { useMemo, useSyncExternalStore } from 'react';
import type { ExternalStore } from '../types.js';

/**
 * A store whose source handle is obtained on first subscribe, not during render: React
 * subscribes only on the client after commit, so a server render (or a render React
 * throws away) never makes the client follow a turn or open a conversation.
 * `get` hands out the same handle to event handlers (send, retry).
 */
export interface LazyStore<H extends ExternalStore<S>, S> extends ExternalStore<S | undefined> {
  get(): H;
}

export function lazyStore<H extends ExternalStore<S>, S>(open: () => H): LazyStore<H, S> {
  let handle: H | undefined;
  const get = (): H => (handle ??= open());
  return {
    get,
    subscribe: (listener) => get().subscribe(listener),
    getSnapshot: () => handle?.getSnapshot(),
  };
}

const nothing = (): undefined => undefined;

/** Reads a lazy store; `undefined` until subscribed, and always on the server. */
export function useLazy<S>(store: ExternalStore<S | undefined>): S | undefined {
  return useSyncExternalStore(store.subscribe, store.getSnapshot, nothing);
}

/**
 * Reads an ExternalStore. Methods are wrapped once per store because implementations
 * may rely on `this` (classes with `#private` state), and React re-subscribes whenever
 * the `subscribe` function's identity changes.
 */
export function useStore<S>(store: ExternalStore<S>): S {
  const bound = useMemo(
    () => ({ subscribe: (listener: () => void) => store.subscribe(listener), get: () => store.getSnapshot() }),
    [store],
  );
  return useSyncExternalStore(bound.subscribe, bound.get, bound.get);
}
