/**
 * A {@link Store} in memory: the `storage: 'memory'` choice, and where the client
 * continues when IndexedDB fails mid-session. Behaves like the IndexedDB store (copies
 * in and out, holes end a load) so code tested on it holds on the real one.
 */
import { chunkWins, foldWins, nextRow } from './monotonic.js';
import { isEndedStatus } from './records.js';
import type { EventChunk, LoadedTurn, LoadResult, OutboxRecord, Store, TurnRecord } from './store.js';

/** The store returned by {@link createMemoryStore}. */
export interface MemoryStore extends Store {
  readonly kind: 'memory';
  appendChunks(items: readonly { record: TurnRecord; chunk: EventChunk }[]): Promise<void>;
}

interface Lease {
  owner: string;
  expiresAt: number;
}

/**
 * Creates an empty in-memory store. Data lives as long as the store object: nothing
 * survives a reload.
 *
 * @example
 * const client = createLifeline({ baseUrl: '/api', storage: createMemoryStore() });
 */
export function createMemoryStore(): MemoryStore {
  const turns = new Map<string, TurnRecord>();
  /** Chunks per turn, kept sorted by firstSeq. */
  const chunks = new Map<string, EventChunk[]>();
  const outbox = new Map<string, OutboxRecord>();
  const leases = new Map<string, Lease>();

  /** Writes a row by the rule of every store (monotonic.ts); false when the write was dropped. */
  const write = (record: TurnRecord): boolean => {
    const next = nextRow(turns.get(record.id), record);
    if (next !== undefined) turns.set(record.id, structuredClone(next));
    return next !== undefined;
  };

  const append = (record: TurnRecord, chunk: EventChunk): void => {
    // A late append of a folded turn is dropped with its row.
    if (!write(record)) return;
    // Keyed by firstSeq like IndexedDB's [turnId, firstSeq]: a chunk replaces a shorter one under its key, never a longer one.
    const list = (chunks.get(chunk.turnId) ?? []).filter((stored) => stored.firstSeq !== chunk.firstSeq || !chunkWins(stored, chunk));
    if (list.some((stored) => stored.firstSeq === chunk.firstSeq)) return;
    // Events are immutable once decoded: kept by reference (a copy per event costs more than the rest of the client).
    list.push({ ...chunk, events: chunk.events.slice() });
    list.sort((a, b) => a.firstSeq - b.firstSeq);
    chunks.set(chunk.turnId, list);
  };

  return {
    kind: 'memory',
    open: () => Promise.resolve(),
    loadTurns(filter = {}) {
      const items: TurnRecord[] = [];
      for (const record of turns.values()) {
        if (filter.unfinished === true && isEndedStatus(record.status)) continue;
        if (filter.conversationId !== undefined && record.conversationId !== filter.conversationId) continue;
        items.push(structuredClone(record));
      }
      return Promise.resolve<LoadResult<TurnRecord>>({ items, skipped: [] });
    },
    loadTurn(turnId) {
      const stored = turns.get(turnId);
      if (stored === undefined) return Promise.resolve(undefined);
      const record = structuredClone(stored);
      const events: LoadedTurn['events'] = [];
      let last = 0;
      for (const chunk of chunks.get(turnId) ?? []) {
        // Like the IndexedDB store: stop at a hole so the client refetches instead of skipping it.
        if (chunk.firstSeq > last + 1) break;
        // Chunks of two tabs may overlap; each seq is taken once.
        for (const event of chunk.events) {
          if (event.seq !== last + 1) continue;
          events.push(event);
          last = event.seq;
        }
      }
      if (record.text === undefined) record.lastSeq = last;
      return Promise.resolve({ record, events });
    },
    putTurn(record) {
      write(record);
      return Promise.resolve();
    },
    appendChunk(record, chunk) {
      append(record, chunk);
      return Promise.resolve();
    },
    appendChunks(items) {
      for (const { record, chunk } of items) append(record, chunk);
      return Promise.resolve();
    },
    foldTurn(record) {
      chunks.delete(record.id);
      if (foldWins(turns.get(record.id), record)) turns.set(record.id, structuredClone(record));
      return Promise.resolve();
    },
    deleteTurn(turnId) {
      chunks.delete(turnId);
      turns.delete(turnId);
      return Promise.resolve();
    },
    sweepEnded(before) {
      let count = 0;
      for (const [id, record] of turns) {
        if (record.endedAt !== undefined && record.endedAt < before && isEndedStatus(record.status)) {
          turns.delete(id);
          chunks.delete(id);
          count += 1;
        }
      }
      return Promise.resolve(count);
    },
    loadOutbox() {
      const items = [...outbox.values()].map((record) => structuredClone(record)).sort((a, b) => a.order - b.order);
      return Promise.resolve({ items, skipped: [] });
    },
    putOutbox(record) {
      outbox.set(record.operationId, structuredClone(record));
      return Promise.resolve();
    },
    deleteOutbox(operationId) {
      outbox.delete(operationId);
      return Promise.resolve();
    },
    tryLease(name, owner, ttlMs, now) {
      const lease = leases.get(name);
      if (lease === undefined || lease.expiresAt <= now || lease.owner === owner) {
        leases.set(name, { owner, expiresAt: now + ttlMs });
        return Promise.resolve(true);
      }
      return Promise.resolve(false);
    },
    releaseLease(name, owner) {
      if (leases.get(name)?.owner === owner) leases.delete(name);
      return Promise.resolve();
    },
    clear() {
      turns.clear();
      chunks.clear();
      outbox.clear();
      leases.clear();
      return Promise.resolve();
    },
    close() {},
  };
}
