import type { JsonObject, MessageContent, ServerTurnStatus, TurnEndStatus, TurnEvent, TurnObject } from '../../protocol/schemas.js';
import type { OperatorState, ReceiptBody } from '../../protocol/server-schemas.js';

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
  /** The `textSha256` of its `turn.end`, kept so a receipt is checked without reading the log (section 10). */
  textSha256?: string;
}

/**
 * What {@link TurnLog.recordDelivery} made of a receipt: `recorded` (now or before),
 * `mismatch` (the hash differs; recorded as such unless already delivered), or why it
 * was refused. `turn` is the record after the receipt.
 */
export type DeliveryOutcome =
  | { kind: 'recorded' | 'mismatch'; turn: StoredTurn }
  | { kind: 'not_ended' | 'invalid_seq'; turn: StoredTurn }
  | { kind: 'unknown' };

/** Why a live turn is asked to stop: a user's cancel, or an operator's end with its reason (section 11). */
export type StopRequest = { kind: 'cancel' } | { kind: 'operator'; reason: string };

/**
 * The receipt rules of docs/protocol.md section 10, on a record (shared by every store so
 * they cannot differ): `undefined` when the receipt changes nothing.
 */
export function applyReceipt(turn: StoredTurn, receipt: ReceiptBody, at: string): { outcome: DeliveryOutcome['kind']; delivery?: StoredTurn['delivery'] } {
  if (turn.endedAt === undefined || turn.textSha256 === undefined) return { outcome: 'not_ended' };
  if (receipt.seq !== turn.lastSeq) return { outcome: 'invalid_seq' };
  const current = turn.delivery ?? { state: 'pending' };
  if (receipt.textSha256 !== turn.textSha256) {
    // Delivered stays delivered: one device's bad copy does not undo another's proof.
    if (current.state !== 'pending') return { outcome: 'mismatch' };
    return { outcome: 'mismatch', delivery: { state: 'mismatch', at } };
  }
  if (current.state === 'delivered') return { outcome: 'recorded' };
  // A mismatch repaired by the client's rebuild becomes delivered, at the first good receipt.
  return { outcome: 'recorded', delivery: { state: 'delivered', at } };
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
    delivery: { state: 'pending' },
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

/** Options of {@link TurnLog.waitForEvents}. */
export interface WaitOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /**
   * True when the caller read the log up to `after` a moment ago and its last event was
   * not `turn.end`: anything newer, the end included, is then an event the wait itself
   * notices, so a store may skip its own look at the turn first (one round trip less per
   * wake on Redis). Default false.
   */
  justRead?: boolean;
}

/** What an operator listing asks for (the route has checked every field). */
export interface OperatorQuery {
  state: OperatorState;
  principal?: string;
  conversationId?: string;
  /** Only turns that entered the state at or after this, ms since the epoch. */
  sinceMs?: number;
  limit: number;
  /** A live turn with nothing logged for this long is stuck, ms. */
  stuckAfterMs: number;
  /** An ended turn with no receipt this long after its end is undelivered, ms. */
  undeliveredAfterMs: number;
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
   * Appends `events` in order as one step, like `append` for each (a `turn.end` may only
   * be last). Optional: the producer coalesces the events an agent yields at once into
   * one call here where the log has it (one round trip on Redis), else it appends them one
   * by one.
   */
  appendMany?(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]>;
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
   * or `timeoutMs` passes. The handler's live follow loop is built on this. A store whose
   * wake-up brings the new events along may answer them (seq `after + 1` on, in order,
   * a few): the caller then need not read them. Answering nothing is always allowed.
   */
  waitForEvents(turnId: string, after: number, options: WaitOptions): Promise<TurnEvent[] | void>;
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
  /**
   * Records a delivery receipt (section 10, since 1.2) atomically on the turn's record.
   * Optional: without it the handler answers the receipt route `404`, like a 1.1 server.
   */
  recordDelivery?(turnId: string, receipt: ReceiptBody, at: string): Promise<DeliveryOutcome>;
  /**
   * Turns in an operator state, newest first, through the log's operator index (section 11).
   * Optional: without it the operator API answers `404` for listings.
   */
  listOperatorTurns?(query: OperatorQuery): Promise<StoredTurn[]>;
  /** Like {@link requestCancel}, saying why; what {@link stopRequest} answers on every instance. Optional. */
  requestStop?(turnId: string, stop: StopRequest): Promise<void>;
  /** The stop asked for a live turn, if any (cross-instance in Redis). Optional: else {@link isCancelRequested}. */
  stopRequest?(turnId: string): Promise<StopRequest | undefined>;
}

/** The end statuses a turn can reach, for convenience. */
export type EndedStatus = TurnEndStatus;
export type { ServerTurnStatus };
