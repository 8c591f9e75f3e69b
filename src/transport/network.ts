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

interface EventScope {
  addEventListener?: (type: string, listener: () => void) => void;
  removeEventListener?: (type: string, listener: () => void) => void;
  navigator?: { onLine?: boolean };
}

/** Reads `navigator.onLine` and the global `online`/`offline` events, looked up on use (SSR-safe). */
export function createBrowserNetworkMonitor(): NetworkMonitor {
  const scope = globalThis as EventScope;
  return {
    online: () => scope.navigator?.onLine !== false,
    subscribe(listener) {
      const add = scope.addEventListener;
      const remove = scope.removeEventListener;
      if (typeof add !== 'function' || typeof remove !== 'function') return () => {};
      const on = (): void => listener(true);
      const off = (): void => listener(false);
      add.call(scope, 'online', on);
      add.call(scope, 'offline', off);
      return () => {
        remove.call(scope, 'online', on);
        remove.call(scope, 'offline', off);
      };
    },
  };
}
