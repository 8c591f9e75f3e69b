/**
 * Builders and raw IndexedDB helpers shared by the IndexedDB store tests (over
 * fake-indexeddb; test/browser runs the same store in real Chromium).
 */
import { expect, vi } from 'vitest';
import { IDBFactory } from 'fake-indexeddb';
import { isStorageError, StorageError } from '../../../src/errors.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { createIndexedDbStore, type IndexedDbStore, type IndexedDbStoreOptions } from '../../../src/storage/indexeddb-store.js';
import type { EventChunk, OutboxRecord, TurnRecord } from '../../../src/storage/store.js';

export const CONV = 'conv_1';

export function row(id: string, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return { id, conversationId: CONV, status: 'streaming', lastSeq: 0, createdAt: 1_000, updatedAt: 1_000, ...overrides };
}

export function events(turnId: string, from: number, to: number): TurnEvent[] {
  const list: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq++) {
    list.push(
      seq === 1
        ? { turnId, seq, type: 'turn.start', messageId: 'msg_1', conversationId: CONV, createdAt: '2026-01-01T00:00:00.000Z' }
        : { turnId, seq, type: 'delta', text: `w${seq} ` },
    );
  }
  return list;
}

export function chunk(turnId: string, from: number, to: number): EventChunk {
  return { turnId, firstSeq: from, lastSeq: to, events: events(turnId, from, to) };
}

export function textOf(list: readonly TurnEvent[]): string {
  return list.map((event) => (event.type === 'delta' ? event.text : '')).join('');
}

export function outbox(operationId: string, order: number, overrides: Partial<OutboxRecord> = {}): OutboxRecord {
  return {
    operationId,
    conversationId: CONV,
    content: `message ${order}`,
    createdAt: 1_000 + order,
    order,
    attempts: 0,
    nextAttemptAt: 0,
    state: 'queued',
    ...overrides,
  };
}

// ------------------------------------------------------------------ raw IndexedDB helpers

/** A factory that records its connections and open events; `version` forces the version asked for. */
export function spyFactory(base: IDBFactory, forcedVersion?: number) {
  const connections: IDBDatabase[] = [];
  let opens = 0;
  let onBlocked: () => void = () => undefined;
  const blocked = new Promise<void>((resolve) => (onBlocked = resolve));
  const factory: IDBFactory = {
    open(name: string, version?: number) {
      opens++;
      const request = base.open(name, forcedVersion ?? version);
      request.addEventListener('success', () => connections.push(request.result));
      request.addEventListener('blocked', () => onBlocked());
      return request;
    },
    deleteDatabase: (name) => base.deleteDatabase(name),
    databases: () => base.databases(),
    cmp: (a, b) => base.cmp(a, b),
  };
  return { factory, connections, blocked, opens: () => opens };
}

export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Opens without any versionchange handling, like an old tab running code that ignores it. */
export function rawOpen(factory: IDBFactory, name: string, version?: number): Promise<IDBDatabase> {
  return request(factory.open(name, version));
}

export async function rawPut(factory: IDBFactory, name: string, storeName: string, value: unknown): Promise<void> {
  const db = await rawOpen(factory, name);
  try {
    const tx = db.transaction(storeName, 'readwrite');
    tx.objectStore(storeName).put(value);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

export async function rawCount(factory: IDBFactory, name: string, storeName: string): Promise<number> {
  const db = await rawOpen(factory, name);
  try {
    return await request(db.transaction(storeName).objectStore(storeName).count());
  } finally {
    db.close();
  }
}

const stores: IndexedDbStore[] = [];
export function makeStore(options: IndexedDbStoreOptions = {}): { store: IndexedDbStore; factory: IDBFactory } {
  const factory = options.indexedDB ?? new IDBFactory();
  const store = createIndexedDbStore({ namespace: 'test', ...options, indexedDB: factory });
  stores.push(store);
  return { store, factory };
}

export async function rejection(promise: Promise<unknown>): Promise<StorageError> {
  const error = await promise.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(isStorageError(error)).toBe(true);
  return error as StorageError;
}


/** For `afterEach`: closes every store `makeStore` opened, and undoes fake timers and spies. */
export function closeStores(): void {
  for (const store of stores.splice(0)) store.close();
  vi.useRealTimers();
  vi.restoreAllMocks();
}
