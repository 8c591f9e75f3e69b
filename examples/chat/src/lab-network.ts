/**
 * "Go offline" for the fault lab, at browser level for new requests: while offline, the
 * fetch injected into `createLifeline` rejects like a dead network does (TypeError), and
 * `navigator.onLine` plus the offline/online events tell the same story. Streams already
 * open are not touched — exactly like a real browser going offline.
 */
let offline = false;
const listeners = new Set<() => void>();
const realFetch = globalThis.fetch.bind(globalThis);

/** The fetch given to `createLifeline`. */
export const labFetch: typeof fetch = (input, init) =>
  offline ? Promise.reject(new TypeError('Failed to fetch (the fault lab is offline)')) : realFetch(input, init);

/** The fault lab's own requests always go out. */
export const rawFetch = realFetch;

export function isLabOffline(): boolean {
  return offline;
}

export function setLabOffline(next: boolean): void {
  if (next === offline) return;
  offline = next;
  Object.defineProperty(navigator, 'onLine', { configurable: true, get: () => !offline });
  window.dispatchEvent(new Event(offline ? 'offline' : 'online'));
  for (const listener of listeners) listener();
}

export function subscribeLabOffline(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
