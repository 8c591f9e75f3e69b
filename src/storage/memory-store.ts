/**
 * A {@link Store} in memory: the `storage: 'memory'` choice, and where the client
 * continues when IndexedDB fails mid-session. It keeps the IndexedDB store's rules
 * (`monotonic.ts`: rows only move forward, loads stop at a hole; copies in and out), so
 * code tested on it holds on the real one.
 */
import { chunkWins, joinChunks, leaseFree, nextRow } from './monotonic.js';
import { isEndedStatus } from './records.js';
import type { LeaseRecord } from './schema.js';
import type { EventChunk, OutboxRecord, Store, TurnRecord } from './store.js';

/** The store returned by {@link createMemoryStore}. */
export interface MemoryStore extends Store {
  readonly kind: 'memory';
  appendChunks(items: readonly { record: TurnRecord; chunk: EventChunk }[]): Promise<void>;
}

/** Copies in and out, as IndexedDB does (looked up on use: importing must not need it). */
const copy = <T>(value: T): T => structuredClone(value);

/**
 * Creates an empty in-memory store. Data lives as long as the store object: nothing
 * survives a reload.
 *
 * @example
 * const client = createLifeline({ baseUrl: '/api', storage: createMemoryStore() });
 */
export function createMemoryStore(): MemoryStore {
  const turns = new Map<string, TurnRecord>();
  /** Keyed `turnId firstSeq`, like IndexedDB's `[turnId, firstSeq]` (ids have no spaces). */
  const chunks = new Map<string, EventChunk>();
  const outbox = new Map<string, OutboxRecord>();
  const leases = new Map<string, LeaseRecord>();
  const keyOf = (chunk: EventChunk): string => `${chunk.turnId} ${chunk.firstSeq}`;
  const chunksOf = (turnId: string): EventChunk[] => [...chunks.values()].filter((chunk) => chunk.turnId == turnId).sort((a, b) => a.firstSeq - b.firstSeq);
  const dropChunks = (turnId: string): void => chunksOf(turnId).forEach((chunk) => chunks.delete(keyOf(chunk)));
  /** Every write: rows by the rules of every store (a late append of a folded turn is dropped with its row); a fold drops the turn's chunks. */
  const write = async (items: readonly { record: TurnRecord; chunk?: EventChunk }[], fold?: boolean): Promise<void> => {
    for (const { record, chunk } of items) {
      const row = nextRow(turns.get(record.id), record);
      if (fold) dropChunks(record.id);
      if (row) turns.set(row.id, copy(row));
      // Events are immutable once decoded: kept by reference (a copy per event costs more than the rest of the client).
      if (row && chunk && chunkWins(chunks.get(keyOf(chunk)), chunk)) chunks.set(keyOf(chunk), { ...chunk, events: [...chunk.events] });
    }
  };

  const store: MemoryStore = {
    kind: 'memory',
    async open() {},
    async loadTurns({ unfinished, conversationId } = {}) {
      const items = [...turns.values()].filter((row) => !(unfinished && isEndedStatus(row.status)) && (conversationId ?? row.conversationId) == row.conversationId);
      return { items: copy(items), skipped: [] };
    },
    async loadTurn(turnId) {
      const row = turns.get(turnId);
      return row && joinChunks(copy(row), chunksOf(turnId));
    },
    putTurn: (record) => write([{ record }]),
    appendChunk: (record, chunk) => write([{ record, chunk }]),
    appendChunks: write,
    foldTurn: (record) => write([{ record }], true),
    async deleteTurn(turnId) {
      turns.delete(turnId);
      dropChunks(turnId);
    },
    async sweepEnded(before) {
      const old = [...turns.values()].filter((row) => row.endedAt! < before);
      for (const { id } of old) await store.deleteTurn(id);
      return old.length;
    },
    async loadOutbox() {
      return { items: copy([...outbox.values()].sort((a, b) => a.order - b.order)), skipped: [] };
    },
    async putOutbox(record) {
      outbox.set(record.operationId, copy(record));
    },
    async deleteOutbox(operationId) {
      outbox.delete(operationId);
    },
    async tryLease(name, owner, ttlMs, now) {
      const free = leaseFree(leases.get(name), owner, now);
      if (free) leases.set(name, { name, owner, expiresAt: now + ttlMs });
      return free;
    },
    async releaseLease(name, owner) {
      if (leases.get(name)?.owner == owner) leases.delete(name);
    },
    async clear() {
      for (const map of [turns, chunks, outbox, leases]) map.clear();
    },
    close() {},
  };
  return store;
}
