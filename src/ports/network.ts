/**
 * Online/offline as the browser reports it. Where there are no such events (Node,
 * workers without them) the network counts as always online.
 */

/** Online/offline signal (the same shape the outbox takes). */
export interface NetworkMonitor {
  online(): boolean;
  /** Calls `listener` on every change; returns unsubscribe. */
  subscribe(listener: (online: boolean) => void): () => void;
}

/** Reads `navigator.onLine` and the global `online`/`offline` events, looked up on use (SSR-safe). */
export function createBrowserNetworkMonitor(): NetworkMonitor {
  const scope = globalThis as Partial<Pick<Window, 'addEventListener' | 'removeEventListener'>> & { navigator?: { onLine?: boolean } };
  const online = (): boolean => scope.navigator?.onLine !== false;
  return {
    online,
    subscribe(listener) {
      // The browser updates `navigator.onLine` before it fires either event.
      const update = (): void => listener(online());
      const each = (method: 'addEventListener' | 'removeEventListener'): void => {
        for (const type of ['online', 'offline']) scope[method]?.(type, update);
      };
      each('addEventListener');
      return () => each('removeEventListener');
    },
  };
}
