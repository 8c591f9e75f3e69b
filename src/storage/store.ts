import type { LifelineError, StorageError } from '../errors.js';
import type { ActionState, OutboxRecord, PartEntry, TurnStatus } from '../core/domain.js';
import type { MessageContent, LoggedEvent } from '../protocol/schemas.js';

export type { ActionState, EndedTurnStatus, OutboxRecord, OutboxState, PartEntry, TurnStatus } from '../core/domain.js';

/**
 * A turn's metadata row (object store `turns`). Text and actions of an unfinished turn
 * live in its chunks; once ended the chunks are folded into `text`/`actions` here.
 */
export interface TurnRecord {
  id: string;
  conversationId: string;
  messageId?: string;
  /** Operation id of the submission that created the turn, when known. */
  operationId?: string;
  /**
   * The user message that started the turn, when this client sent or saw it sent: the
   * outbox forgets accepted entries, and the conversation shows it again after a reload.
   */
  content?: MessageContent;
  status: TurnStatus;
  lastSeq: number;
  createdAt: number;
  updatedAt: number;
  endedAt?: number;
  /** Present once folded (ended turns): the whole text. */
  text?: string;
  /** Present once folded (ended turns). */
  actions?: ActionState[];
  /** Present once folded (ended turns that had parts): the message's entries. */
  parts?: PartEntry[];
  /** Failure of an ended turn, as plain data. */
  error?: ReturnType<LifelineError['toJSON']>;
}

/** One flushed run of consecutive events of a turn (object store `chunks`, key `[turnId, firstSeq]`). */
export interface EventChunk {
  turnId: string;
  firstSeq: number;
  lastSeq: number;
  events: LoggedEvent[];
}

/**
 * What {@link Store.loadTurn} returns: the record and, unless folded, its events in seq
 * order. For an unfolded turn `record.lastSeq` is the seq of the last event returned.
 */
export interface LoadedTurn {
  record: TurnRecord;
  events: LoggedEvent[];
  /**
   * Stored chunks that could not be used (corrupt, foreign, or after a hole). `events`
   * then stops at the last contiguous seq and `record.lastSeq` is lowered to match, so
   * the client fetches the rest instead of continuing over a hole.
   */
  skipped?: StorageError[];
}

/** One turn's share of {@link Store.write}: its row and, unless a bare row or a fold, its next chunk. */
export interface TurnWrite {
  record: TurnRecord;
  chunk?: EventChunk;
}

/** Result of a bulk load: good rows plus one error per skipped corrupt or foreign row. */
export interface LoadResult<T> {
  items: T[];
  skipped: StorageError[];
}

/**
 * Persistence used by the client. Implementations: `createIndexedDbStore` (idb) and
 * `createMemoryStore`. Every write is one transaction and resolves only once it is
 * durable (`tx.done`); every failure rejects with a {@link StorageError}. Tabs share the
 * store, so writes only move a turn forward, decided inside their transaction
 * (`monotonic.ts`): a row write never un-folds a folded row nor lowers `lastSeq`, a late
 * append of a folded turn is dropped (not an error), a fold never replaces one that got
 * further, and a chunk never replaces a longer one stored under its key.
 */
export interface Store {
  /** `'indexeddb'`, `'memory'` or a custom name. */
  readonly kind: string;
  /** Opens (or re-opens after `terminated`/`Clear-Site-Data`). Rejects with a StorageError. */
  open(): Promise<void>;
  /**
   * Turns in storage (in no particular order): one conversation's when `conversationId`
   * is given, else those whose status is not ended when `unfinished`, else all.
   */
  loadTurns(filter?: { unfinished?: boolean; conversationId?: string }): Promise<LoadResult<TurnRecord>>;
  /** One turn with its events (empty when folded). `undefined` when not stored. */
  loadTurn(turnId: string): Promise<LoadedTurn | undefined>;
  /**
   * ONE transaction for the rows and chunks of any number of turns (a flush of the
   * client's persistence layer costs one transaction however many turns stream). A row
   * without a chunk creates or updates the turn; a row with `text` is a fold: the turn's
   * chunks are deleted and the row holds the whole turn. Items of one turn come in seq order.
   */
  write(items: readonly TurnWrite[]): Promise<void>;
  /** Deletes the turn row and its chunks. */
  deleteTurn(turnId: string): Promise<void>;
  /** Deletes ended turns whose `endedAt` is before `before`; returns how many. */
  sweepEnded(before: number): Promise<number>;
  loadOutbox(): Promise<LoadResult<OutboxRecord>>;
  putOutbox(record: OutboxRecord): Promise<void>;
  deleteOutbox(operationId: string): Promise<void>;
  /**
   * Cross-tab lease used by the outbox where Web Locks are missing: in one transaction,
   * takes the lease `name` for `owner` until `now + ttlMs` if it is free, expired or
   * already held by `owner`. Returns true when `owner` holds it afterwards.
   */
  tryLease(name: string, owner: string, ttlMs: number, now: number): Promise<boolean>;
  /** Gives the lease up if `owner` holds it. */
  releaseLease(name: string, owner: string): Promise<void>;
  /** Deletes everything in this namespace (logout). */
  clear(): Promise<void>;
  /** Closes connections (never throws); the store may be opened again. */
  close(): void;
  /**
   * Called by the store when it loses its connection outside any call (a newer tab's
   * versionchange, the database deleted or cleared); it reopens on next use. Failures of
   * a call (quota, …) are its rejection. Set by the client.
   */
  onTrouble?: (error: StorageError) => void;
}
