import type { JsonObject, MessageContent, ServerTurnStatus, TurnEndStatus, TurnEvent, TurnObject } from '../../protocol/schemas.js';

/**
 * A turn's record as a store keeps it. `principal` scopes visibility (see
 * `authorize`); it never leaves the server.
 */
export interface StoredTurn extends TurnObject {
  principal: string;
  /** The content of the message that started the turn, exactly as accepted (sent on the wire since 1.1). */
  content: MessageContent;
  /** The submission's per-request `context` (docs/protocol.md §1), kept with the turn; never on the wire. */
  context?: JsonObject;
  /** Set once the turn's log holds `turn.end`; retention counts from here. */
  endedAt?: string;
}

/** What {@link TurnLog.createTurn} receives. */
export interface NewTurn {
  id: string;
  conversationId: string;
  messageId: string;
  principal: string;
  content: MessageContent;
  /** The submission's `context`, when it had one. */
  context?: JsonObject | undefined;
  /** A continuation (docs/protocol.md §9): the id of the assistant message it continues. */
  continues?: string | undefined;
  createdAt: string;
}

/** The record of a turn just created: pending, nothing logged yet. Shared by every TurnLog. */
export function pendingTurn(init: NewTurn): StoredTurn {
  return {
    id: init.id,
    conversationId: init.conversationId,
    messageId: init.messageId,
    status: 'pending',
    lastSeq: 0,
    createdAt: init.createdAt,
    updatedAt: init.createdAt,
    content: init.content,
    ...(init.continues !== undefined && { continues: init.continues }),
    ...(init.context !== undefined && { context: init.context }),
    principal: init.principal,
  };
}

/** What the idempotency ledger remembers about one key. */
export interface IdempotencyRecord {
  /** conversation id + canonical body; another fingerprint for the same key answers 422. */
  fingerprint: string;
  /** `in_flight` while the first request is still creating its turn (a duplicate answers 409). */
  state: 'in_flight' | 'done';
  /** The first answer's body (when `done`). */
  turnId?: string;
  messageId?: string;
  conversationId?: string;
  createdAt: string;
}

/** Events appended by the handler; seq is assigned by the log. */
export type NewTurnEvent = TurnEvent extends infer E ? (E extends TurnEvent ? Omit<E, 'seq' | 'turnId'> : never) : never;

/**
 * What {@link TurnLog.getTurn} answers for a turn whose log retention removed: the
 * principal it belonged to is kept so another principal still sees `404`, never `410`
 * (PROTOCOL §8: ids leak nothing).
 */
export interface ExpiredTurn {
  expired: true;
  principal: string;
}

/** True when `getTurn` answered an expired turn. */
export function isExpiredTurn(turn: StoredTurn | ExpiredTurn | undefined): turn is ExpiredTurn {
  return turn !== undefined && 'expired' in turn;
}

/**
 * Default byte bound of one {@link TurnLog.read} page: about 4 MiB of event data
 * (PROTOCOL §3). Replay answers and follow-stream backlog reads use it, so one answer or
 * one chunk never holds a whole large turn.
 */
export const DEFAULT_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * The size an event counts for in a page: the length of its JSON (UTF-16 code units, as
 * `JSON.stringify` returns it; bytes for ASCII). A store may count its own stored
 * encoding instead, which differs by a few dozen units per event.
 */
export function eventSize(event: TurnEvent): number {
  return JSON.stringify(event).length;
}

/** A page of events read from a log. */
export interface EventPage {
  events: TurnEvent[];
  /** True when more events after the last one returned are already logged. */
  hasMore: boolean;
}

/**
 * The server-side buffer a turn is produced into and read back from. The in-memory
 * implementation serves one process; the Redis Streams one serves many instances.
 * Every method is async so a networked store fits the same handler.
 */
export interface TurnLog {
  /** Creates a turn record with status `pending`, lastSeq 0. */
  createTurn(turn: NewTurn): Promise<StoredTurn>;
  /**
   * The turn, or `undefined` when unknown; an {@link ExpiredTurn} (with the turn's
   * principal) when it existed but retention removed its log.
   */
  getTurn(turnId: string): Promise<StoredTurn | ExpiredTurn | undefined>;
  /**
   * Appends one event, numbering it lastSeq + 1, updating the turn's status
   * (`streaming` after the first event; the end status after `turn.end`), `updatedAt`
   * and, at `turn.end`, `endedAt`. Returns the logged event.
   */
  append(turnId: string, event: NewTurnEvent): Promise<TurnEvent>;
  /**
   * Events with seq > `after`, oldest first: at most `limit` of them, and no more than
   * `maxBytes` of event data ({@link eventSize} summed; default
   * {@link DEFAULT_PAGE_BYTES}) except that a page always holds at least one event when
   * any is after `after`. `hasMore` is true whenever the page was cut, by either bound.
   * A store must not load more than about one page into memory to answer.
   */
  read(turnId: string, after: number, limit: number, maxBytes?: number): Promise<EventPage>;
  /**
   * Resolves as soon as the log has an event with seq > `after` (at once when it
   * already has), or the turn ends, or `signal` aborts (then resolves, never rejects),
   * or `timeoutMs` passes. The handler's live follow loop is built on this.
   */
  waitForEvents(turnId: string, after: number, options: { signal: AbortSignal; timeoutMs: number }): Promise<void>;
  /** A conversation's turns visible to `principal`, newest first. */
  listTurns(conversationId: string, principal: string, limit: number): Promise<StoredTurn[]>;
  /** Reads an idempotency record (scoped by principal). */
  getIdempotency(principal: string, key: string): Promise<IdempotencyRecord | undefined>;
  /**
   * Stores `record` only if no record exists for the key (atomic; `SET NX` in Redis).
   * Returns the existing record when there was one, else `undefined`.
   */
  putIdempotencyIfAbsent(principal: string, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined>;
  /** Replaces the record of a key this caller created (in_flight → done). */
  completeIdempotency(principal: string, key: string, record: IdempotencyRecord): Promise<void>;
  /** Removes a key whose turn could not be created, so a retry can try again. */
  deleteIdempotency(principal: string, key: string): Promise<void>;
  /**
   * This instance will not produce a turn it just created (the submission failed after
   * `createTurn`). A shared log gives up the turn's producer lease, so the turn ends
   * `producer_lost` at the next look instead of staying live. Optional: a log without
   * leases has nothing to give up.
   */
  release?(turnId: string): Promise<void>;
  /** Asks the producer of a live turn to stop (cross-instance in Redis). */
  requestCancel(turnId: string): Promise<void>;
  /** True once cancel was requested for the turn. */
  isCancelRequested(turnId: string): Promise<boolean>;
  /**
   * Resolves when the log answers a trivial request, rejects when it cannot (the
   * handler's readiness route, `/healthz`). Optional: a log without one counts as ready.
   */
  ping?(): Promise<void>;
  /** Releases timers and connections. */
  close(): Promise<void>;
}

/** The end statuses a turn can reach, for convenience. */
export type EndedStatus = TurnEndStatus;
export type { ServerTurnStatus };
