/**
 * Layout of a Lifeline IndexedDB database and its migrations. One database per
 * namespace, named `lifeline:<namespace>`.
 */
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import type { EventChunk, OutboxRecord, TurnRecord, TurnStatus } from './store.js';

/** One cross-tab lease (object store `leases`, key `name`). */
export interface LeaseRecord {
  name: string;
  owner: string;
  /** Epoch ms after which anyone may take the lease. */
  expiresAt: number;
}

/**
 * The typed schema idb checks every call against. Values are what this version writes;
 * what comes back is validated again (see `records.ts`), because another version, an
 * extension or a disk error may have put something else there.
 */
export interface LifelineDbSchema extends DBSchema {
  turns: {
    key: string;
    value: TurnRecord;
    indexes: {
      'by-conversation': string;
      'by-status': TurnStatus;
      /** Sparse: only ended rows carry `endedAt`, so sweeping reads keys of old ended rows only. */
      'by-ended': number;
    };
  };
  chunks: { key: [turnId: string, firstSeq: number]; value: EventChunk };
  outbox: { key: string; value: OutboxRecord; indexes: { 'by-order': number } };
  leases: { key: string; value: LeaseRecord };
}

export type LifelineDb = IDBPDatabase<LifelineDbSchema>;
export type UpgradeTransaction = IDBPTransaction<LifelineDbSchema, StoreNames<LifelineDbSchema>[], 'versionchange'>;

/**
 * One step of the schema. Runs inside the `versionchange` transaction: it may create or
 * delete stores and indexes and move data with `transaction`, but must not await
 * anything that is not IndexedDB (the transaction would commit half-way).
 */
export type Migration = (db: LifelineDb, transaction: UpgradeTransaction) => void;

/**
 * Ordered migrations: entry `i` takes a database from version `i` to `i + 1`. Shipped
 * entries never change; a new layout is a new entry at the end.
 */
export const MIGRATIONS: readonly Migration[] = [
  // v1: turns, their event chunks, the outbox and the lease table.
  (db) => {
    const turns = db.createObjectStore('turns', { keyPath: 'id' });
    turns.createIndex('by-conversation', 'conversationId');
    turns.createIndex('by-status', 'status');
    turns.createIndex('by-ended', 'endedAt');
    db.createObjectStore('chunks', { keyPath: ['turnId', 'firstSeq'] });
    const outbox = db.createObjectStore('outbox', { keyPath: 'operationId' });
    outbox.createIndex('by-order', 'order');
    db.createObjectStore('leases', { keyPath: 'name' });
  },
  // v2 goes here, e.g.:
  // (db, transaction) => { transaction.objectStore('turns').createIndex('by-updated', 'updatedAt'); },
];

/** Version this build opens; a newer tab's higher version makes this one fail to open (VersionError). */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The `upgrade` callback: applies every migration between the stored version and the
 * requested one, in order. A database opened at a version beyond the known migrations
 * (a test forcing a newer version) gets the known ones only.
 */
export function upgradeDatabase(db: LifelineDb, oldVersion: number, newVersion: number | null, transaction: UpgradeTransaction): void {
  const target = Math.min(newVersion ?? SCHEMA_VERSION, MIGRATIONS.length);
  for (let version = oldVersion; version < target; version++) {
    (MIGRATIONS[version] as Migration)(db, transaction);
  }
}
