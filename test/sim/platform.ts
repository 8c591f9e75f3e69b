/**
 * Puts the simulated browser where the client looks for the platform: timers, both clocks,
 * randomness, Web Crypto, `AbortSignal.timeout`, `window`/`document`/`navigator` (online,
 * Web Locks), BroadcastChannel, `localStorage`, `reportError`. Whatever the client reaches
 * through a global lands in the simulator, so no real timer or real randomness escapes it,
 * ported code or not. Each call is attributed to the tab whose code made it (an
 * AsyncLocalStorage the world enters before calling a tab, and every callback of the
 * scheduler runs in its owner's), so closing a tab silences all it queued. `uninstall()`
 * puts every global back.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, webcrypto } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Rng } from './rng.js';
import type { Scheduler } from './scheduler.js';
import type { SimTabs } from './tabs.js';

export interface Platform {
  /** Runs `fn` as tab `owner`: what it queues (timers, requests, locks) belongs to that tab. */
  as<T>(owner: string, fn: () => T): T;
  /** The tab whose code is running, or `world`. */
  owner(): string;
  /** Browser online state; setting it fires `online`/`offline` on the page. */
  setOnline(online: boolean): void;
  /** Fires the page's `resume` (back from a freeze). */
  resume(): void;
  /** Errors handed to `reportError` (a listener's throw the client reported). */
  readonly reported: unknown[];
  uninstall(): void;
}

export interface PlatformParts {
  scheduler: Scheduler;
  rng: Rng;
  tabs: SimTabs;
  localStorage: Storage;
  context: AsyncLocalStorage<string>;
}

/** The context every world callback runs in (created before the scheduler that uses it). */
export function createContext(): AsyncLocalStorage<string> {
  return new AsyncLocalStorage<string>();
}

export function installPlatform({ scheduler, rng, tabs, localStorage, context }: PlatformParts): Platform {
  const scope = globalThis as unknown as Record<string, unknown>;
  const saved: [object, PropertyKey, PropertyDescriptor | undefined][] = [];
  const set = (target: object, key: PropertyKey, value: unknown): void => {
    saved.push([target, key, Object.getOwnPropertyDescriptor(target, key)]);
    Object.defineProperty(target, key, { value, configurable: true, writable: true, enumerable: false });
  };
  const owner = (): string => context.getStore() ?? 'world';
  const reported: unknown[] = [];
  let online = true;
  const page = new EventTarget();
  const doc = new EventTarget();
  // Every tab's client listens to the one page: more than Node's default 10 is the point.
  setMaxListeners(0, page, doc);
  /** Listeners run as the tab that added them (and not at all once it is gone). */
  const wrapped = new WeakMap<object, Map<string, EventListener>>();
  const listen = (target: EventTarget) => ({
    addEventListener(type: string, listener: EventListener | null, options?: AddEventListenerOptions | boolean) {
      if (!listener) return;
      const tab = owner();
      const byOwner = wrapped.get(listener) ?? new Map<string, EventListener>();
      wrapped.set(listener, byOwner);
      const run: EventListener = byOwner.get(tab + type) ?? ((event) => void (tabs.dead(tab) || context.run(tab, () => listener(event))));
      byOwner.set(tab + type, run);
      target.addEventListener(type, run, options);
    },
    removeEventListener(type: string, listener: EventListener | null, options?: EventListenerOptions | boolean) {
      const run = listener && wrapped.get(listener)?.get(owner() + type);
      if (run) target.removeEventListener(type, run, options);
    },
  });

  const setTimer = (run: unknown, ms?: unknown, ...args: unknown[]) => scheduler.setTimer(() => (run as (...a: unknown[]) => void)(...args), ms, owner());
  const setRepeat = (run: unknown, ms?: unknown, ...args: unknown[]) => scheduler.setTimer(() => (run as (...a: unknown[]) => void)(...args), ms, owner(), true);
  const clearTimer = (handle: unknown) => scheduler.clearTimer(handle);
  set(scope, 'setTimeout', setTimer);
  set(scope, 'clearTimeout', clearTimer);
  set(scope, 'setInterval', setRepeat);
  set(scope, 'clearInterval', clearTimer);
  set(Date, 'now', () => scheduler.wall());
  set(performance, 'now', () => scheduler.now());
  set(Math, 'random', () => rng.next());
  // nanoid keeps a pool of random bytes across runs: its refills draw from a stream of their
  // own, so how full the pool was left never shifts the client's jitter.
  const bytesRng = rng.fork('bytes');
  set(webcrypto, 'getRandomValues', <T extends ArrayBufferView | null>(array: T): T => {
    if (array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(bytesRng.next() * 256);
    }
    return array;
  });
  set(webcrypto, 'randomUUID', () => `${rng.id(8)}-${rng.id(4)}-4${rng.id(3)}-a${rng.id(3)}-${rng.id(12)}`);
  // Web Crypto's digest finishes on a thread pool, outside virtual time: answered now instead.
  set(webcrypto.subtle, 'digest', async (_algorithm: unknown, data: ArrayBuffer | ArrayBufferView) => {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const digest = createHash('sha256').update(bytes).digest();
    return digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength);
  });
  set(AbortSignal, 'timeout', (ms: number) => {
    const controller = new AbortController();
    scheduler.setTimer(() => controller.abort(new DOMException('sim: timed out', 'TimeoutError')), ms, owner());
    return controller.signal;
  });
  set(scope, 'window', { setTimeout: setTimer, clearTimeout: clearTimer });
  set(scope, 'document', { hidden: false, ...listen(doc) });
  set(scope, 'navigator', {
    get onLine() {
      return online;
    },
    get locks() {
      return tabs.locksFor(owner());
    },
    storage: { persist: async () => true },
  });
  const pageListeners = listen(page);
  set(scope, 'addEventListener', pageListeners.addEventListener);
  set(scope, 'removeEventListener', pageListeners.removeEventListener);
  set(scope, 'dispatchEvent', page.dispatchEvent.bind(page));
  set(scope, 'BroadcastChannel', function BroadcastChannel(name: string) {
    return new (tabs.channelFor(owner()))(name);
  });
  set(scope, 'localStorage', localStorage);
  set(scope, 'reportError', (error: unknown) => void reported.push(error));

  return {
    as: (tab, fn) => context.run(tab, fn),
    owner,
    setOnline(next) {
      if (next === online) return;
      online = next;
      page.dispatchEvent(new Event(next ? 'online' : 'offline'));
    },
    resume: () => void doc.dispatchEvent(new Event('resume')),
    reported,
    uninstall() {
      for (const [target, key, descriptor] of saved.reverse()) {
        if (descriptor) Object.defineProperty(target, key, descriptor);
        else delete (target as Record<PropertyKey, unknown>)[key];
      }
      saved.length = 0;
    },
  };
}
