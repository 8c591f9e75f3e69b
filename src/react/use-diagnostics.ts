'use client';
import { useMemo, useSyncExternalStore } from 'react';
import type { Diagnostic, ExternalStore, LifelineClient } from '../types.js';
import { useLifeline } from './context.js';

const EMPTY: readonly Diagnostic[] = [];
const none = (): readonly Diagnostic[] => EMPTY;

function diagnosticsStore(client: LifelineClient, limit: number): ExternalStore<readonly Diagnostic[]> {
  let list = EMPTY;
  return {
    subscribe: (onChange) =>
      client.diagnostics.subscribe((diagnostic) => {
        // A new array per diagnostic and the same one otherwise: that is what lets React skip renders.
        list = [...list.slice(list.length >= limit ? list.length - limit + 1 : 0), diagnostic];
        onChange();
      }),
    getSnapshot: () => list,
  };
}

/**
 * The last `limit` diagnostics (default 50), oldest first, heard since this component
 * mounted. The array is replaced on each new diagnostic and stable otherwise.
 * For everything since start, pass `onDiagnostic` to `createLifeline`.
 */
export function useLifelineDiagnostics(limit = 50): readonly Diagnostic[] {
  const client = useLifeline();
  const store = useMemo(() => diagnosticsStore(client, Math.max(1, limit)), [client, limit]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, none);
}
