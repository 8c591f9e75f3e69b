/** The platform's IndexedDB factory (part of the storage port; its own file so the IndexedDB store can import it without a cycle). */
export const platformIndexedDb = (): IDBFactory | undefined => globalThis.indexedDB ?? undefined;
