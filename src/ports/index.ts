/**
 * # Ports: everything the client touches outside itself
 *
 * The client (everything in `src/` but `src/server` and `src/conformance`) reaches the
 * platform only through these ports; no other module reads `Date.now`, `performance`,
 * timers, `fetch`, `indexedDB`, `navigator`, `localStorage`, `BroadcastChannel`,
 * `document`, `window`, `Math.random` or `crypto.getRandomValues`
 * (test/unit/client/ports-only.test.ts parses `src/` and fails otherwise).
 *
 * One file per port, each its interface and its real implementation. Every real one
 * looks the platform up on each call, so importing it is SSR-safe and a test's fake
 * timers or stubbed globals apply.
 *
 * | port      | interface        | real                | what it is                                                  |
 * |-----------|------------------|---------------------|-------------------------------------------------------------|
 * | `clock`   | {@link Clock}    | `performance`, Date | `now()` monotonic (every duration), `wallNow()` epoch (stored/shown) |
 * | `timers`  | {@link Timers}   | `setTimeout`        | `set(fn, ms)`/`clear(h)`: ms clamped ≥ 0, `Infinity` never, > 2^31−1 in steps |
 * | `http`    | {@link Http}     | `fetch`             | every request; `options.fetch` is this port's `fetch`        |
 * | `storage` | {@link StoragePort} | IndexedDB, `localStorage` | `openStore(namespace)`, `pageStorage()` (the outbox journal), `persist()` |
 * | `tabs`    | {@link Tabs}     | Web Locks, BroadcastChannel | `locks()`, `channel(name)`                          |
 * | `random`  | {@link Random}   | `Math.random`, nanoid | `next()` in [0,1) (jitter), `id()` (operation ids, lease owners) |
 * | `network` | {@link NetworkMonitor} | `navigator.onLine` + events | `online()`, `subscribe(listener)`               |
 * | `page`    | {@link Page}     | `document`, `window` | `isBrowser()`, `visible()`, `frame(cb)`, `onHide`, `onResume` |
 *
 * `createLifeline({ ..., ports })` takes a `Partial<Ports>` (for tests and simulators);
 * every port left out is the real one. A simulator supplies, for example:
 * - `clock` + `timers` over one virtual time (`timers.set` may be handed any ms ≥ 0 or
 *   `Infinity`; the client never relies on the platform's overflow);
 * - `http.fetch` answering from a simulated protocol server (streams as `Response` bodies);
 *   the stream attempt also needs `page.isBrowser()` true (a server render opens no stream);
 * - `storage.openStore` returning a simulated {@link Store} (quota, unavailable, corrupt
 *   records, throws), `storage.pageStorage` a journal that throws or fills up;
 * - `tabs` over an in-process lock manager and channel hub shared by the simulated tabs;
 * - `random` = `seededRandom(prng)`: repeatable jitter and ids;
 * - `network`/`page` it flips at will (offline, `pagehide`, `resume`).
 *
 * Wall time is stored, never scheduled on: a stored `nextAttemptAt` (the outbox) is
 * re-based on the monotonic clock when this page first sees it, so a wall-clock jump either
 * way neither parks nor hurries a message.
 */
import { realClock, type Clock } from './clock.js';
import { realHttp, type Http } from './http.js';
import { createBrowserNetworkMonitor, type NetworkMonitor } from './network.js';
import { realPage, type Page } from './page.js';
import { realRandom, type Random } from './random.js';
import { realStorage, type StoragePort } from './storage.js';
import { realTabs, type Tabs } from './tabs.js';
import { realTimers, type Timers } from './timers.js';

export type { Clock } from './clock.js';
export type { Http } from './http.js';
export type { NetworkMonitor } from './network.js';
export type { Page } from './page.js';
export type { Random } from './random.js';
export type { KeyValueStorage, StoragePort } from './storage.js';
export type { LockManagerLike, TabChannel, Tabs } from './tabs.js';
export type { TimerHandle, Timers } from './timers.js';
export { wallTime } from './clock.js';
export { seededRandom } from './random.js';
export { clampDelay, MAX_TIMER_MS } from './timers.js';

/** Every port the client uses. */
export interface Ports {
  clock: Clock;
  timers: Timers;
  http: Http;
  storage: StoragePort;
  tabs: Tabs;
  random: Random;
  network: NetworkMonitor;
  page: Page;
}

/** `given` with every missing port the real one. */
export function resolvePorts(given: Partial<Ports> = {}): Ports {
  return {
    clock: given.clock ?? realClock,
    timers: given.timers ?? realTimers,
    http: given.http ?? realHttp,
    storage: given.storage ?? realStorage,
    tabs: given.tabs ?? realTabs,
    random: given.random ?? realRandom,
    network: given.network ?? createBrowserNetworkMonitor(),
    page: given.page ?? realPage,
  };
}

export { realClock, realHttp, realPage, realRandom, realStorage, realTabs, realTimers, createBrowserNetworkMonitor };
