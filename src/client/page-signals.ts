/**
 * What the page tells a client: online/offline for every follower (and one `network`
 * diagnostic), storage flushed when the page goes away, and frozen pages resumed. Every
 * listener goes when `signal` aborts (the client is disposed).
 */
import type { Persistence } from '../storage/persistence.js';
import type { NetworkMonitor } from '../transport/network.js';
import type { TurnFollower } from '../follow/types.js';
import type { Diagnostic } from '../types.js';
import { runFramed } from './frames.js';

export interface PageSignalTargets {
  network: NetworkMonitor;
  followers: ReadonlyMap<string, TurnFollower>;
  persistence: Pick<Persistence, 'flush'>;
  emit: (diagnostic: Diagnostic) => void;
  now: () => number;
}

export function listenToPage(signal: AbortSignal, { network, followers, persistence, emit, now }: PageSignalTargets): void {
  const flush = (): void => {
    runFramed();
    void persistence.flush();
  };
  signal.addEventListener(
    'abort',
    network.subscribe((online) => {
      emit({ type: 'network', at: now(), online });
      for (const follower of followers.values()) follower.onNetwork(online);
    }),
  );
  // Flushing on any visibility change is harmless; the one that matters is to `hidden`.
  globalThis.addEventListener?.('pagehide', flush, { signal });
  globalThis.document?.addEventListener('visibilitychange', flush, { signal });
  globalThis.document?.addEventListener('resume', () => followers.forEach((follower) => follower.onResume()), { signal });
}
