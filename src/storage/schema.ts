/**
 * Layout of a Lifeline IndexedDB database and its migrations. One database per
 * namespace, named `lifeline:<namespace>`.
 */
import type { EventChunk, OutboxRecord, TurnRecord } from './store.js';

/** One cross-tab lease (object store `leases`, key `name`). */
export interface LeaseRecord {
  name: string;
  owner: string;
  /** Epoch ms after which anyone may take the lease. */
  expiresAt: number;
}

/**
 * The object stores and what this version writes in each. What comes back is validated
 * again (`records.ts`): another version, an extension or a disk error may have put
 * something else there. Indexes: `turns` by `conversationId` (`by-conversation`), by
 * `status` (`by-status`) and by `endedAt` (`by-ended`, sparse: only ended rows carry it,
 * so the sweep reads keys of old ended rows only); `outbox` by `order` (`by-order`).
 */
export interface StoredValues {
  turns: TurnRecord;
  chunks: EventChunk;
  outbox: OutboxRecord;
  leases: LeaseRecord;
}

/** The name of an object store. */
export type StoreName = keyof StoredValues;

/** Version this build opens; a newer tab's higher version makes this one fail to open (VersionError). */
export const SCHEMA_VERSION = 1;

/**
 * The `upgradeneeded` step, inside the `versionchange` transaction (a later version that
 * moves data takes `request.transaction` too; nothing but IndexedDB may be awaited): one block per version from the stored one
 * on. Shipped blocks never change; a new layout is a new `if (oldVersion < n)` block at the
 * end, and a bump of {@link SCHEMA_VERSION}.
 */
export function upgradeDatabase(db: IDBDatabase, oldVersion: number): void {
  // v1: turns, their event chunks, the outbox and the lease table.
  if (oldVersion < 1) {
    const turns = db.createObjectStore('turns', { keyPath: 'id' });
    turns.createIndex('by-conversation', 'conversationId');
    turns.createIndex('by-status', 'status');
    turns.createIndex('by-ended', 'endedAt');
    db.createObjectStore('chunks', { keyPath: ['turnId', 'firstSeq'] });
    db.createObjectStore('outbox', { keyPath: 'operationId' }).createIndex('by-order', 'order');
    db.createObjectStore('leases', { keyPath: 'name' });
  }
}
