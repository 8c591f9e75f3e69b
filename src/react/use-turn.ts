'use client';
import { useMemo } from 'react';
import type { Turn, TurnSnapshot } from '../types.js';
import { useLifeline } from './context.js';
import { lazyStore, useLazy } from './store.js';

/**
 * Follows one turn and returns its snapshot (`undefined` before mount, on the server,
 * and while `turnId` is undefined). The client hands out one handle per id, so any
 * number of components (and StrictMode's double mount) share one connection. Unmounting
 * does not close the turn: other views may still show it.
 */
export function useTurn(turnId: string | undefined): TurnSnapshot | undefined {
  const client = useLifeline();
  const store = useMemo(
    () => (turnId === undefined ? IDLE : lazyStore<Turn, TurnSnapshot>(() => client.turn(turnId))),
    [client, turnId],
  );
  return useLazy(store);
}

const IDLE = { subscribe: () => () => {}, getSnapshot: (): undefined => undefined };
