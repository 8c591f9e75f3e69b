/**
 * Layout of a Lifeline IndexedDB database and its migrations. One database per
 * namespace, named `lifeline:<namespace>`.
 */
import type { DBSchema, IDBPDatabase } from 'idb';
import type { StoredChunk } from './chunk-records.js';
import type { OutboxRecord, TurnRecord, TurnStatus } from './store.js';

/** One cross-tab lease (object store `leases`, key `name`). */
export interface LeaseRecord {
  name: string;
  owner: string;
  /** Epoch ms after which anyone may take the lease. */
  expiresAt: number;
}

/**
 * The typed schema idb checks every call against. Values are what this version writes;
 * what comes back is validated again (`records.ts`): another version, an extension or a
 * disk error may have put something else there.
 */
export interface LifelineDbSchema extends DBSchema {
  turns: {
    key: string;
    value: TurnRecord;
    indexes: {
      'by-conversation': string;
      'by-status': TurnStatus;
      /** Sparse: only ended rows carry `endedAt`, so the sweep reads keys of old ended rows only. */
      'by-ended': number;
    };
  };
  /** Events, or (version 2) a run of plain deltas as its texts (`chunk-records.ts`). */
  chunks: { key: [turnId: string, firstSeq: number]; value: StoredChunk };
  outbox: { key: string; value: OutboxRecord; indexes: { 'by-order': number } };
  leases: { key: string; value: LeaseRecord };
}

export type LifelineDb = IDBPDatabase<LifelineDbSchema>;

/** Version this build opens; a newer tab's higher version makes this one fail to open (VersionError). */
export const SCHEMA_VERSION = 2;

/**
 * The `upgradeneeded` step, inside the `versionchange` transaction (a later version that
 * moves data takes `request.transaction` too; nothing but IndexedDB may be awaited): one block per version from the stored one
 * on. Shipped blocks never change; a new layout is a new `if (oldVersion < n)` block at the
 * end, and a bump of {@link SCHEMA_VERSION}.
 */
export function upgradeDatabase(db: LifelineDb, oldVersion: number): void {
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
  // v2: a chunk may hold a run of plain deltas as its texts (chunk-records.ts). No block:
  // nothing moves, v1 chunks read as before. The bump keeps a v1 build, which would take
  // the new records for corrupt ones, from opening what a v2 build wrote.
}
