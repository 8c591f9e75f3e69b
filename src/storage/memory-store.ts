/**
 * A {@link Store} in memory: the `storage: 'memory'` choice, and where the client
 * continues when IndexedDB fails mid-session. It keeps the IndexedDB store's rules
 * (`monotonic.ts`: rows only move forward, loads stop at a hole; copies in and out), so
 * code tested on it holds on the real one. It belongs to one tab: its lease is always free.
 */
import { chunkWins, joinChunks, nextRow } from './monotonic.js';
import { isEnded } from '../core/domain.js';
import type { EventChunk, OutboxRecord, Store, TurnRecord } from './store.js';

/** The store returned by {@link createMemoryStore}. */
export interface MemoryStore extends Store {
  readonly kind: 'memory';
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
  /** Each turn's chunks by firstSeq, like IndexedDB's key `[turnId, firstSeq]`. */
  const chunks = new Map<string, Map<number, EventChunk>>();
  const outbox = new Map<string, OutboxRecord>();
  const deleteTurn = async (turnId: string): Promise<void> => void (turns.delete(turnId), chunks.delete(turnId));

  return {
    kind: 'memory',
    async open() {},
    close() {},
    /** Rows by the rules of every store (a late append of a folded turn is dropped with its row); a fold (row with `text`) drops the turn's chunks. */
    async write(items) {
      for (const { record, chunk } of items) {
        const row = nextRow(turns.get(record.id), record);
        if (record.text !== undefined) chunks.delete(record.id);
        if (!row) continue;
        turns.set(row.id, copy(row));
        if (!chunk) continue;
        const held = chunks.get(row.id) ?? new Map<number, EventChunk>();
        // Events are immutable once decoded: kept by reference (a copy per event costs more than the rest of the client).
        if (chunkWins(held.get(chunk.firstSeq), chunk)) chunks.set(row.id, held.set(chunk.firstSeq, { ...chunk, events: [...chunk.events] }));
      }
    },
    async loadTurns({ unfinished, conversationId } = {}) {
      const items = [...turns.values()].filter((row) => (conversationId === undefined ? !(unfinished && isEnded(row.status)) : row.conversationId == conversationId));
      return { items: copy(items), skipped: [] };
    },
    async loadTurn(turnId) {
      const row = turns.get(turnId);
      return row && joinChunks(copy(row), [...(chunks.get(turnId)?.values() ?? [])].sort((a, b) => a.firstSeq - b.firstSeq));
    },
    deleteTurn,
    async sweepEnded(before) {
      const old = [...turns.values()].filter((row) => row.endedAt! < before);
      old.forEach(({ id }) => deleteTurn(id));
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
    tryLease: async () => true,
    async releaseLease() {},
    async clear() {
      for (const map of [turns, chunks, outbox]) map.clear();
    },
  };
}
