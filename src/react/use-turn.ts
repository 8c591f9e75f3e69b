'use client';
import { useMemo } from 'react';
import { realTimers } from '../ports/timers.js';
import type { Turn, TurnSnapshot } from '../types.js';
import { useLifeline } from './context.js';
import { useLazy } from './store.js';

/**
 * Follows one turn and returns its snapshot (`undefined` before mount, on the server,
 * and while `turnId` is undefined). Each mounted hook holds a handle of its own
 * (`client.turn(id)`), taken when it subscribes and closed when it unmounts: the turn
 * keeps streaming while any view shows it and stops after the last one goes. Views of one
 * turn share one connection, StrictMode's remount included.
 */
export function useTurn(turnId: string | undefined): TurnSnapshot | undefined {
  const client = useLifeline();
  const store = useMemo(() => (turnId === undefined ? IDLE : heldTurn(() => client.turn(turnId))), [client, turnId]);
  return useLazy(store);
}

/**
 * A turn handle held while the store has subscribers: opened by the first, closed a task
 * after the last leaves, so StrictMode's unsubscribe-and-subscribe-again keeps the stream.
 */
function heldTurn(open: () => Turn) {
  let handle: Turn | undefined;
  let subscribers = 0;
  return {
    subscribe(listener: () => void): () => void {
      const held = (handle ??= open());
      subscribers++;
      const unsubscribe = held.subscribe(listener);
      return () => {
        unsubscribe();
        if (--subscribers > 0) return;
        realTimers.set(() => {
          if (subscribers > 0 || handle !== held) return;
          held.close();
          handle = undefined;
        }, 0);
      };
    },
    getSnapshot: (): TurnSnapshot | undefined => handle?.getSnapshot(),
  };
}

const IDLE = { subscribe: () => () => {}, getSnapshot: (): undefined => undefined };
