/**
 * The ports one simulated tab hands its client (`createLifeline({ ports })`, src/ports/):
 * both clocks from virtual time, seeded randomness and ids, its own `fetch` into the
 * simulated network, its own store facade over the browser's disk and the browser's
 * `localStorage`, and the browser's locks and channels as this tab. Timers, the network
 * monitor and the page are left to the real ports, which run over the simulated platform
 * (platform.ts): so the real timers port's stepping of long delays is exercised against a
 * `setTimeout` that overflows as the platform's does.
 */
import type { Ports } from '../../src/ports/index.js';
import type { Rng } from './rng.js';
import type { SimWorld } from './world.js';

/** The ports the simulator supplies (the rest are the real ones, over the simulated platform). */
export type SimPorts = Pick<Ports, 'clock' | 'random' | 'http' | 'storage' | 'tabs'>;

export function simPorts(world: Pick<SimWorld, 'scheduler' | 'network' | 'disk' | 'sharing'>, tab: string, rng: Rng): SimPorts {
  const Channel = world.sharing.channelFor(tab);
  return {
    clock: { now: () => world.scheduler.now(), wallNow: () => world.scheduler.wall() },
    random: { next: () => rng.next(), id: () => rng.id(21) },
    http: { fetch: world.network.fetchFor(tab) },
    storage: { openStore: () => world.disk.storeFor(tab), pageStorage: () => world.disk.localStorage, persist: async () => true },
    tabs: { locks: () => world.sharing.locksFor(tab), channel: (name) => new Channel(name) },
  };
}
