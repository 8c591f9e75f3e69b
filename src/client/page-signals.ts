/**
 * What the page tells a client: online/offline for every follower (and one `network`
 * diagnostic), storage flushed when the page goes away, and frozen pages resumed. Every
 * listener goes when `signal` aborts (the client is disposed).
 */
import type { Clock } from '../ports/clock.js';
import type { NetworkMonitor } from '../ports/network.js';
import type { Page } from '../ports/page.js';
import type { Persistence } from '../storage/persistence.js';
import type { TurnFollower } from '../follow/types.js';
import type { Diagnostic } from '../types.js';
import type { Frames } from './frames.js';

export interface PageSignalTargets {
  network: NetworkMonitor;
  page: Page;
  frames: Pick<Frames, 'runFramed'>;
  followers: ReadonlyMap<string, TurnFollower>;
  persistence: Pick<Persistence, 'flush'>;
  emit: (diagnostic: Diagnostic) => void;
  clock: Clock;
}

export function listenToPage(signal: AbortSignal, { network, page, frames, followers, persistence, emit, clock }: PageSignalTargets): void {
  signal.addEventListener(
    'abort',
    network.subscribe((online) => {
      emit({ type: 'network', at: clock.wallNow(), online });
      for (const follower of followers.values()) follower.onNetwork(online);
    }),
  );
  page.onHide(() => {
    frames.runFramed();
    void persistence.flush();
  }, signal);
  page.onResume(() => followers.forEach((follower) => follower.onResume()), signal);
}
