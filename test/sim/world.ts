/**
 * One simulated browser and its server: the scheduler, the seeded streams, the network,
 * the disk, the tabs (each a real `createLifeline` client on the simulated platform), and
 * what the world remembers for the invariants (every message sent, every promise the API
 * returned, every seq each iterator gave). Built by `createWorld(seed)`; `close()` puts the
 * platform back.
 */
import { createLifeline } from '../../src/client.js';
import type { Diagnostic, LifelineClient, Turn } from '../../src/types.js';
import { createContext, installPlatform, type Platform } from './platform.js';
import { createRng, type Rng } from './rng.js';
import { createScheduler, type Scheduler } from './scheduler.js';
import { createSimServer, type SimServer } from './server.js';
import { createSimNetwork, type SimNetwork } from './network.js';
import { createSimDisk, type SimDisk } from './storage.js';
import { createSimTabs, type SimTabs } from './tabs.js';
import { simPorts } from './ports.js';

export interface TrackedPromise {
  label: string;
  settled: boolean;
  /**
   * The promise waits on the app, not on the client: a closed turn's `completed` settles only
   * once the app follows the turn again (`Turn.close` in src/types.ts), or at `dispose()`.
   */
  waitsOnApp?: () => boolean;
}

export interface Handle {
  turn: Turn;
  /** Seqs the handle's iterator gave, in order. */
  seqs: number[];
  closed: boolean;
}

export interface SimTab {
  id: string;
  client: LifelineClient;
  /** False once disposed or crashed: never called again. */
  alive: boolean;
  handles: Map<string, Handle>;
  promises: TrackedPromise[];
  corruptReports: number;
  diagnostics: number;
}

export interface SentMessage {
  content: string;
  tab: string;
  discarded: boolean;
  /** The journal took its copy at `send()` (false when `localStorage` was full). */
  journaled: boolean;
  sentAt: number;
}

/** App behaviour the steps toggle. */
export interface AppFaults {
  /** The app's listeners (snapshot subscribers, `onDiagnostic`) throw. */
  listenersThrow: boolean;
  /**
   * The next this many calls of the client's `random` throw: a bug inside the client's own
   * handling (the follower draws one per transition), not a network condition.
   */
  randomThrowsNext: number;
}

export interface SimWorld {
  readonly seed: number;
  readonly rng: Rng;
  readonly scheduler: Scheduler;
  readonly server: SimServer;
  readonly network: SimNetwork;
  readonly disk: SimDisk;
  readonly sharing: SimTabs;
  readonly platform: Platform & { online(): boolean };
  readonly tabs: SimTab[];
  readonly messages: Map<string, SentMessage>;
  readonly conversations: string[];
  readonly app: AppFaults;
  /** Unhandled rejections and uncaught exceptions (a microtask's throw) seen while the world ran. */
  readonly unhandled: unknown[];
  openTab(): SimTab;
  /** Runs `fn` as `tab`'s code. */
  as<T>(tab: SimTab, fn: () => T): T;
  /** Remembers a promise the API returned, to check it settles. */
  track(tab: SimTab, label: string, promise: Promise<unknown>, waitsOnApp?: () => boolean): void;
  close(): void;
}

export interface WorldOptions {
  /** The real setImmediate (captured at import, before any patching). */
  setImmediate: (run: () => void) => void;
}

const realSetImmediate = globalThis.setImmediate;

/** `rng` whose `next()` throws while `app.randomThrowsNext` counts down (the client's randomness only). */
function throwing(rng: Rng, app: AppFaults): Rng {
  return {
    ...rng,
    next() {
      if (app.randomThrowsNext > 0) {
        app.randomThrowsNext--;
        throw new Error('sim: a bug inside the client (random threw)');
      }
      return rng.next();
    },
  };
}

export function createWorld(seed: number, options: Partial<WorldOptions> = {}): SimWorld {
  const rng = createRng(seed);
  const context = createContext();
  const scheduler = createScheduler({ setImmediate: options.setImmediate ?? realSetImmediate, runAs: (owner, run) => context.run(owner, run) });
  const server = createSimServer(rng.fork('server'), scheduler, { unknownEventChance: 0 });
  const network = createSimNetwork(rng.fork('network'), scheduler, server);
  const disk = createSimDisk(rng.fork('disk'), scheduler);
  const sharing = createSimTabs(rng.fork('tabs'), scheduler);
  const app: AppFaults = { listenersThrow: false, randomThrowsNext: 0 };
  const installed = installPlatform({ scheduler, rng: throwing(rng.fork('platform'), app), tabs: sharing, localStorage: disk.localStorage, context });
  let online = true;
  const pageOnline = installed.setOnline;
  const platform = Object.assign(installed, {
    online: () => online,
    setOnline(next: boolean) {
      online = next;
      network.faults.offline = !next;
      pageOnline(next);
    },
  });
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  let tabCount = 0;

  const world: SimWorld = {
    seed,
    rng,
    scheduler,
    server,
    network,
    disk,
    sharing,
    platform,
    tabs: [],
    messages: new Map(),
    conversations: ['conv-a', 'conv-b'],
    app,
    unhandled,
    openTab() {
      const id = `tab${++tabCount}`;
      const tab = context.run(id, (): SimTab => {
        const record: Partial<SimTab> = { id, alive: true, handles: new Map(), promises: [], corruptReports: 0, diagnostics: 0 };
        // The ports (src/ports/) that name this tab; timers, network and page are the real ones over the simulated platform.
        record.client = createLifeline({
          ports: simPorts(world, id, throwing(rng.fork(id), app)),
          baseUrl: 'http://sim.test/api',
          namespace: 'sim',
          retry: { initialDelayMs: 100, maxDelayMs: 4000, maxElapsedMs: 30_000 },
          outbox: { timeoutMs: 10_000 },
          onDiagnostic(diagnostic: Diagnostic) {
            record.diagnostics!++;
            if (process.env['SIM_DIAGNOSTICS']) console.log(`  ${(scheduler.now() / 1000).toFixed(3)}s ${id}`, JSON.stringify(diagnostic).slice(0, 300));
            if (diagnostic.type === 'storage-error' && diagnostic.error.code === 'storage_corrupt_record') record.corruptReports!++;
            if (app.listenersThrow) throw new Error('sim: the app diagnostic listener throws');
          },
        });
        return record as SimTab;
      });
      world.tabs.push(tab);
      world.track(tab, 'client.ready', tab.client.ready);
      return tab;
    },
    as: (tab, fn) => context.run(tab.id, fn),
    track(tab, label, promise, waitsOnApp) {
      const tracked: TrackedPromise = { label, settled: false, ...(waitsOnApp && { waitsOnApp }) };
      tab.promises.push(tracked);
      promise.then(
        () => (tracked.settled = true),
        () => (tracked.settled = true),
      );
    },
    close() {
      process.off('unhandledRejection', onUnhandled);
      process.off('uncaughtException', onUnhandled);
      installed.uninstall();
      // An enabled AsyncLocalStorage stays in Node's list of them for good, and every async
      // resource created later copies a store for each: without this, thousands of seeds in
      // one process slow down quadratically and keep every finished world reachable.
      context.disable();
    },
  };
  return world;
}
