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
  return {
    online: () => scope.navigator?.onLine !== false,
    subscribe(listener) {
      const on = (): void => listener(true);
      const off = (): void => listener(false);
      scope.addEventListener?.('online', on);
      scope.addEventListener?.('offline', off);
      return () => {
        scope.removeEventListener?.('online', on);
        scope.removeEventListener?.('offline', off);
      };
    },
  };
}
