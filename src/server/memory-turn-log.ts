import type { TurnEvent } from '../protocol/schemas.js';
import { DEFAULT_PAGE_BYTES, eventSize, pendingTurn, type EventPage, type IdempotencyRecord, type NewTurnEvent, type StoredTurn, type TurnLog } from './turn-log.js';

/** Options of {@link createMemoryTurnLog}. */
export interface MemoryTurnLogOptions {
  /** How long an ended turn's log and its idempotency keys are kept, ms. Default 24 h. */
  retentionMs?: number;
  /** How often expired turns are swept, ms. Default 60 000 (the timer never keeps a process alive). */
  sweepIntervalMs?: number;
  /** Clock for retention and `updatedAt`, ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** The embedded {@link TurnLog}: one process, no persistence. */
export interface MemoryTurnLog extends TurnLog {
  /** Removes expired turns and keys now (also runs every `sweepIntervalMs`). */
  sweep(): void;
}

/** 24 hours, the protocol's reference retention. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * A logged event without its turnId and seq (both implied by its position). Deltas,
 * nearly every event of a turn, are kept as their bare text.
 */
type CompactEvent = string | Exclude<NewTurnEvent, { type: 'delta' }>;

interface Entry {
  turn: StoredTurn;
  events: CompactEvent[];
  endedAtMs: number | undefined;
  cancelRequested: boolean;
  /** Resolvers of pending `waitForEvents` calls; each removes itself when settled. */
  waiters: Set<() => void>;
}

interface KeyEntry {
  record: IdempotencyRecord;
  /** When an `in_flight` record was written; one whose request died is dropped after retention. */
  writtenAtMs: number;
}

/**
 * Creates the in-memory turn log the handler uses by default. Ended turns and their
 * idempotency keys are kept for `retentionMs` after `turn.end`; after that
 * `getTurn` answers an expired turn (from a small tombstone kept for one more retention
 * period, then the id is simply unknown).
 *
 * @example
 * const store = createMemoryTurnLog({ retentionMs: 60 * 60 * 1000 });
 * const handler = createLifelineHandler({ store, agent });
 */
export function createMemoryTurnLog(options: MemoryTurnLogOptions = {}): MemoryTurnLog {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  const now = options.now ?? Date.now;
  const turns = new Map<string, Entry>();
  /** Swept turn id → when it was swept and whose it was (another principal still gets 404). */
  const tombstones = new Map<string, { sweptAt: number; principal: string }>();
  /** Conversation id → its turn ids, oldest first. */
  const conversations = new Map<string, string[]>();
  /** Principal → key → record. */
  const keys = new Map<string, Map<string, KeyEntry>>();

  const isoNow = (): string => new Date(now()).toISOString();

  function wake(entry: Entry): void {
    // Copy: each waiter deletes itself from the set while we iterate.
    for (const waiter of [...entry.waiters]) waiter();
  }

  function remove(turnId: string, entry: Entry): void {
    turns.delete(turnId);
    tombstones.set(turnId, { sweptAt: now(), principal: entry.turn.principal });
    const ids = conversations.get(entry.turn.conversationId);
    if (ids) {
      const at = ids.indexOf(turnId);
      if (at >= 0) ids.splice(at, 1);
      if (ids.length === 0) conversations.delete(entry.turn.conversationId);
    }
    wake(entry);
  }

  function expired(entry: Entry): boolean {
    return entry.endedAtMs !== undefined && now() - entry.endedAtMs >= retentionMs;
  }

  /** The entry of a turn that is still retained, removing it if it just expired. */
  function live(turnId: string): Entry | undefined {
    const entry = turns.get(turnId);
    if (entry && expired(entry)) {
      remove(turnId, entry);
      return undefined;
    }
    return entry;
  }

  function expand(turnId: string, index: number, event: CompactEvent): TurnEvent {
    const seq = index + 1;
    if (typeof event === 'string') return { turnId, seq, type: 'delta', text: event };
    return { turnId, seq, ...event } as TurnEvent;
  }

  function keysOf(principal: string): Map<string, KeyEntry> {
    let map = keys.get(principal);
    if (!map) keys.set(principal, (map = new Map()));
    return map;
  }

  function sweep(): void {
    const at = now();
    for (const [turnId, entry] of turns) if (expired(entry)) remove(turnId, entry);
    for (const [turnId, { sweptAt }] of tombstones) if (at - sweptAt >= retentionMs) tombstones.delete(turnId);
    for (const [principal, map] of keys) {
      for (const [key, { record, writtenAtMs }] of map) {
        // A done key lives exactly as long as its turn; an in_flight one whose request
        // never finished (it crashed between put and complete) lives one retention period.
        const gone = record.state === 'done' ? !turns.has(record.turnId ?? '') : at - writtenAtMs >= retentionMs;
        if (gone) map.delete(key);
      }
      if (map.size === 0) keys.delete(principal);
    }
  }

  const timer = setInterval(sweep, options.sweepIntervalMs ?? 60_000);
  (timer as { unref?: () => void }).unref?.();

  return {
    async createTurn(init) {
      if (turns.has(init.id) || tombstones.has(init.id)) throw new Error(`Turn ${init.id} already exists.`);
      const turn = pendingTurn(init);
      turns.set(init.id, { turn, events: [], endedAtMs: undefined, cancelRequested: false, waiters: new Set() });
      const ids = conversations.get(init.conversationId);
      if (ids) ids.push(init.id);
      else conversations.set(init.conversationId, [init.id]);
      return { ...turn };
    },

    async getTurn(turnId) {
      const entry = live(turnId);
      if (entry) return { ...entry.turn };
      const tombstone = tombstones.get(turnId);
      return tombstone ? { expired: true, principal: tombstone.principal } : undefined;
    },

    async append(turnId, event) {
      const entry = live(turnId);
      if (!entry) throw new Error(`Turn ${turnId} is unknown or expired.`);
      if (entry.endedAtMs !== undefined) throw new Error(`Turn ${turnId} has ended; its log is closed.`);
      // Own copy: the caller may reuse or mutate the object it passed in.
      const compact: CompactEvent = event.type === 'delta' ? event.text : structuredClone(event);
      entry.events.push(compact);
      const { turn } = entry;
      turn.lastSeq = entry.events.length;
      turn.updatedAt = isoNow();
      if (event.type === 'turn.end') {
        turn.status = event.status;
        turn.endedAt = turn.updatedAt;
        entry.endedAtMs = now();
      } else {
        turn.status = 'streaming';
      }
      wake(entry);
      return expand(turnId, turn.lastSeq - 1, compact);
    },

    async read(turnId, after, limit, maxBytes = DEFAULT_PAGE_BYTES): Promise<EventPage> {
      const entry = live(turnId);
      if (!entry) return { events: [], hasMore: false };
      const end = Math.min(entry.events.length, Math.max(0, after) + limit);
      const events: TurnEvent[] = [];
      let bytes = 0;
      let i = Math.max(0, after);
      for (; i < end; i++) {
        const event = expand(turnId, i, entry.events[i] as CompactEvent);
        bytes += eventSize(event);
        if (events.length > 0 && bytes > maxBytes) break;
        events.push(event);
      }
      return { events, hasMore: i < entry.events.length };
    },

    waitForEvents(turnId, after, { signal, timeoutMs }) {
      const entry = live(turnId);
      if (!entry || entry.events.length > after || entry.endedAtMs !== undefined || signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timeout);
          signal.removeEventListener('abort', done);
          entry.waiters.delete(done);
          resolve();
        };
        const timeout = setTimeout(done, timeoutMs);
        signal.addEventListener('abort', done, { once: true });
        entry.waiters.add(done);
      });
    },

    async listTurns(conversationId, principal, limit) {
      const ids = conversations.get(conversationId) ?? [];
      const found: StoredTurn[] = [];
      for (let i = ids.length - 1; i >= 0 && found.length < limit; i--) {
        const entry = turns.get(ids[i] as string);
        if (entry && !expired(entry) && entry.turn.principal === principal) found.push({ ...entry.turn });
      }
      return found;
    },

    async getIdempotency(principal, key) {
      const found = keys.get(principal)?.get(key);
      return found ? { ...found.record } : undefined;
    },

    async putIdempotencyIfAbsent(principal, key, record) {
      const map = keysOf(principal);
      const found = map.get(key);
      if (found) return { ...found.record };
      map.set(key, { record: { ...record }, writtenAtMs: now() });
      return undefined;
    },

    async completeIdempotency(principal, key, record) {
      keysOf(principal).set(key, { record: { ...record }, writtenAtMs: now() });
    },

    async deleteIdempotency(principal, key) {
      const map = keys.get(principal);
      map?.delete(key);
      if (map?.size === 0) keys.delete(principal);
    },

    async requestCancel(turnId) {
      const entry = live(turnId);
      if (entry) entry.cancelRequested = true;
    },

    async isCancelRequested(turnId) {
      return turns.get(turnId)?.cancelRequested ?? false;
    },

    async close() {
      clearInterval(timer);
      for (const entry of turns.values()) wake(entry);
    },

    sweep,
  };
}
