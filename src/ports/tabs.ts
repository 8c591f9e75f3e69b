/**
 * What the tabs of an origin share: Web Locks (who leads: the outbox's sender, a shared
 * turn's streaming tab) and channels (BroadcastChannel: relayed events, outbox notices).
 */

/** The part of `navigator.locks` leadership uses. */
export interface LockManagerLike {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown>;
}

/** The part of `BroadcastChannel` the client uses. */
export interface TabChannel {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  close(): void;
}

export interface Tabs {
  /** The lock manager, or `null` where there is none (happy-dom and some embedded browsers expose `navigator.locks` as null). */
  locks(): LockManagerLike | null;
  /** A channel named `name` to the origin's other tabs, or `undefined` where there is none. */
  channel(name: string): TabChannel | undefined;
}

/** `navigator.locks` and `new BroadcastChannel(name)`, looked up on every call (SSR-safe). */
export const realTabs: Tabs = {
  locks: () => (globalThis as { navigator?: { locks?: LockManagerLike | null } }).navigator?.locks ?? null,
  channel: (name) => (typeof globalThis.BroadcastChannel === 'function' ? new globalThis.BroadcastChannel(name) : undefined),
};
