/**
 * Public types of the Lifeline client. Implementations live in `client.ts`,
 * `transport/`, `storage/` and `outbox/`; this file is the contract between them.
 */
import type { MessagePart } from './core/turn-read.js';
import type { LifelineError } from './errors.js';
import type { JsonValue, MessageContent, SubmitContext, TurnEvent } from './protocol/schemas.js';
import type { ActionState, ConnectionState, EndedTurnStatus, OutboxRecord, TurnStatus } from './core/domain.js';
import type { Diagnostic, DrillKind, RecoveryPath, StorageStatus } from './diagnostics.js';

export type { MessagePart, TextPart } from './core/turn-read.js';
export type { ActionState, ConnectionState, PartEntry, TurnStatus, OutboxRecord, OutboxState, EndedTurnStatus } from './core/domain.js';
export type { RetryOptions } from './core/backoff.js';
export type { Diagnostic, DiagnosticType, DrillKind, RecoveryPath, StorageStatus } from './diagnostics.js';
export type { HeadersInput, LifelineOptions, LimitOptions, OutboxOptions, ReceiptOptions, StallOptions } from './options.js';

/** Something that can be listened to. `subscribe` returns its own unsubscribe. */
export interface Subscribable<T> {
  subscribe(listener: (value: T) => void): () => void;
}

/** An external store React (or anything) can read: stable snapshots, change notifications. */
export interface ExternalStore<S> {
  /** The current snapshot; the same object until something changes. */
  getSnapshot(): S;
  /** Calls `listener` after every change; returns unsubscribe. */
  subscribe(listener: () => void): () => void;
}


export interface ConnectionInfo {
  state: ConnectionState;
  /** Attempts since the last successful event; 0 while healthy. */
  attempt: number;
  /** When the next attempt is scheduled (epoch ms), while `waiting`. */
  nextRetryAt?: number;
}

export interface RecoveryInfo {
  path: RecoveryPath;
  /** Events applied through that path. */
  events: number;
  /** Epoch ms. */
  at: number;
}

/** Immutable view of a turn; a new object on every change, the same one otherwise. */
export interface TurnSnapshot {
  id: string;
  conversationId?: string;
  messageId?: string;
  status: TurnStatus;
  /** The assistant text: a pure function of the applied events. */
  text: string;
  /**
   * The assistant message's parts in order: text parts (the deltas placed in them) and
   * every `part` event's part as sent (reasoning, tool calls, AI SDK chunks, app data).
   */
  parts: readonly MessagePart[];
  /** Actions by first appearance, each at its latest state. */
  actions: readonly ActionState[];
  lastSeq: number;
  /** Why the client gave up on the turn (transport, protocol or integrity failure). */
  error?: LifelineError;
  /** The `error` the server logged with `turn.end` (status `failed`), as sent. */
  endError?: JsonValue;
  connection: ConnectionInfo;
  /** The last recovery, if the turn needed one. */
  recovered?: RecoveryInfo;
  /** The last stall the watchdogs detected, if any (kept after recovery, like `recovered`). */
  stall?: StallInfo;
}

/** The snapshot of a turn that has ended: what {@link Turn.completed} resolves with. */
export type EndedTurnSnapshot = TurnSnapshot & { readonly status: EndedTurnStatus };

/** A stall the watchdogs detected. */
export interface StallInfo {
  /** Epoch ms. */
  at: number;
  watchdog: 'first-event' | 'idle';
}

/**
 * A followed turn: an external store of {@link TurnSnapshot}s (subscribers are notified
 * at most once per animation frame, or microtask where there are no frames) and an
 * async iterable of the events applied from the moment iteration starts, each seq once,
 * until the turn ends or is closed.
 */
export interface Turn extends ExternalStore<TurnSnapshot>, AsyncIterable<TurnEvent> {
  readonly id: string;
  /**
   * Resolves with the final snapshot when the turn ends: `complete`, `cancelled`, or
   * `failed` (the server said so, or the client gave up; see `error`). Never rejects. After
   * `dispose()` a turn not ended resolves at once, `failed` with a `disposed` error (only
   * in memory: storage keeps the turn for the next page).
   */
  readonly completed: Promise<EndedTurnSnapshot>;
  /**
   * Asks the server to cancel the turn (section 5); the end then arrives as `turn.end`
   * `cancelled`. Rejects with a typed error: `timeout` past `stall.firstEventMs` (default
   * 15 s) without an answer, `disposed` at once when the client is.
   */
  cancel(): Promise<void>;
  /** Stops following this turn (storage keeps what arrived); `client.turn(id)` follows it again. */
  close(): void;
}

/** A submission as the UI sees it. */
export interface OutboxEntry extends Readonly<OutboxRecord> {}

/** The durable outbox, subscribable. */
export interface Outbox extends ExternalStore<readonly OutboxEntry[]> {
  /** Sends a failed entry again now (same operation id). */
  retry(operationId: string): Promise<void>;
  /** Removes an entry that is not yet accepted. */
  discard(operationId: string): Promise<void>;
}

/** What one submission carries beside its content (docs/protocol.md section 1). */
export interface SendOptions {
  /**
   * The entry's Idempotency-Key (16–128 of `[A-Za-z0-9_-]`), when the caller derives it (an AI
   * SDK continuation: every tab answering the same calls uses the same key). An entry already
   * holding it is answered instead of a new one. Default: a fresh nanoid.
   */
  operationId?: string | undefined;
  /** Per-request data, sent and stored with the entry (it is part of the idempotency fingerprint). Default: none (no `context` member). */
  context?: SubmitContext | undefined;
  /**
   * Headers of this submission's requests, over the client's own. Kept in this page's memory
   * only, never stored (they may hold credentials): a send after a reload, or by another tab,
   * goes without them. Default: none (only the client's `headers`).
   */
  headers?: Record<string, string> | undefined;
}

/** Handle returned by `conversation.send`. */
export interface Submission extends ExternalStore<OutboxEntry | undefined> {
  readonly operationId: string;
  /** Resolves with the followed turn once the server accepted; rejects if the entry fails. */
  readonly accepted: Promise<Turn>;
}

export interface ConversationItem {
  /** `user` for a submission, `assistant` for a turn. */
  role: 'user' | 'assistant';
  /** Operation id for user items, turn id for assistant items. */
  key: string;
  /** For user items. */
  content?: MessageContent;
  /** For user items: the outbox state (`accepted` once the server has it). */
  submission?: OutboxEntry;
  /** For assistant items. */
  turn?: TurnSnapshot;
}

export interface ConversationSnapshot {
  id: string;
  items: readonly ConversationItem[];
}

/** One conversation: send into it, read its interleaved messages. */
export interface Conversation extends ExternalStore<ConversationSnapshot> {
  readonly id: string;
  /** Resolves once the conversation's stored turns (and their messages) are in its snapshot, before any network. Never rejects. */
  readonly ready: Promise<void>;
  /** Writes the message to the durable outbox (before any request) and sends it; see {@link SendOptions}. */
  send(content: MessageContent, options?: SendOptions): Submission;
  /**
   * Sends the message that started `turnId` again as a new submission (a new operation
   * id, so a new turn), e.g. after that turn failed with `turn_expired`. The old turn and
   * its partial text stay as they are. Throws `invalid_argument` when this client does not
   * know the turn's message.
   */
  resend(turnId: string): Submission;
  /** Entries of this conversation only. */
  readonly outbox: Outbox;
}

/** The client returned by `createLifeline`. */
export interface LifelineClient {
  /** Follows a turn (starting from storage when it is stored). One handle per id. */
  turn(turnId: string): Turn;
  /** A conversation to send into and read from. */
  conversation(conversationId: string): Conversation;
  /** Turns restored from storage at start and those followed since. */
  readonly turns: ExternalStore<readonly TurnSnapshot[]>;
  /** Every pending or failed submission. */
  readonly outbox: Outbox;
  readonly diagnostics: Subscribable<Diagnostic>;
  readonly storageStatus: ExternalStore<StorageStatus>;
  /**
   * Finds, adopts and replays a conversation's turns from the server's list endpoint. Each
   * list attempt is bounded by `stall.firstEventMs` and retried within `retry.maxElapsedMs`
   * (then `retry_exhausted`); rejects `disposed` at once when the client is.
   */
  recover(conversationId: string): Promise<readonly TurnSnapshot[]>;
  /** Resolves once stored turns and outbox entries are loaded (before any network), or at once on `dispose()`. */
  readonly ready: Promise<void>;
  /**
   * Sets off a {@link DrillKind} fault on a turn this client follows, for development tools
   * (`lifeline-chat/devtools`) and tests. Answers whether it applied: `cut` and `stall` need the
   * turn's own stream open or opening (not a replay, not another tab's relay), `replay` a turn
   * that is live or ended and verified. Says a `drill` diagnostic either way. Throws
   * `invalid_argument` for an unknown drill or an invalid id.
   */
  drill(turnId: string, drill: DrillKind): boolean;
  /** Deletes all local data of this namespace (logout). */
  clearStorage(): Promise<void>;
  /** Ends every connection and timer. */
  dispose(): void;
}
