/**
 * Where the client keeps what must outlive the page: the {@link Store} it opens (IndexedDB
 * by default), the page's synchronous key-value storage (`localStorage`: the outbox journal,
 * the AI SDK's delivered marks), and the browser's persistence grant.
 */
import { createIndexedDbStore } from '../storage/indexeddb-store.js';
import type { Store } from '../storage/store.js';

/** The part of `Storage` (`localStorage`) the client uses; any call may throw (quota, blocked). */
export type KeyValueStorage = Pick<Storage, 'getItem' | 'setItem' | 'removeItem' | 'key' | 'length'>;

export interface StoragePort {
  /** The store for `namespace` (not opened yet; its `open()` may reject: the client then degrades to memory). */
  openStore(namespace: string): Store;
  /** The page's key-value storage, or `undefined` where the page may not use it. */
  pageStorage(): KeyValueStorage | undefined;
  /** Asks for persistent storage; `false` when refused or not supported. Never rejects. */
  persist(): Promise<boolean>;
}

export const realStorage: StoragePort = {
  // The factory is looked up when the store opens (src/ports/indexeddb.ts).
  openStore: (namespace) => createIndexedDbStore({ namespace }),
  pageStorage() {
    try {
      return globalThis.localStorage ?? undefined;
    } catch {
      // Reading it throws where the page may not use it (blocked cookies).
      return undefined;
    }
  },
  persist: () => new Promise<unknown>((resolve) => resolve(globalThis.navigator?.storage?.persist?.())).then(Boolean, () => false),
};
