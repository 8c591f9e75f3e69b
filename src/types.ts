/**
 * Public types of the Lifeline client. Implementations live in `client.ts`,
 * `transport/`, `storage/` and `outbox/`; this file is the contract between them.
 */
import type { MessagePart } from './core/turn-reducer.js';
import type { LifelineError } from './errors.js';
import type { JsonValue, MessageContent, SubmitContext, TurnEvent } from './protocol/schemas.js';
import type { ActionState, ConnectionState, EndedTurnStatus, OutboxRecord, TurnStatus } from './core/domain.js';
import type { RetryOptions } from './core/backoff.js';
import type { Ports } from './ports/index.js';
import type { Store } from './storage/store.js';

export type { MessagePart, TextPart } from './core/turn-reducer.js';
export type { ActionState, ConnectionState, PartEntry, TurnStatus, OutboxRecord, OutboxState, EndedTurnStatus } from './core/domain.js';
export type { RetryOptions } from './core/backoff.js';

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

/** How a turn's missing events were brought back. */
export type RecoveryPath = 'resume' | 'replay' | 'reload';

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

/** Stall watchdogs (see the stall issue). */
export interface StallOptions {
  /** From acceptance (or attach) to the first event, ms. Default 15 000. */
  firstEventMs?: number;
  /** Between any two events or heartbeats, ms. Default 25 000. */
  idleMs?: number;
}

/** Size caps on untrusted input. */
export interface LimitOptions {
  /** Largest single event's data, code units. Default 1 Mi. */
  maxEventSize?: number;
  /** Largest text of one turn, code units. Default 16 Mi. */
  maxTurnTextLength?: number;
}

export type HeadersInput = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

export interface LifelineOptions {
  /** Base URL of the protocol endpoints, e.g. `/api` or `https://host/api`. */
  baseUrl: string;
  /** Request headers (e.g. Authorization); a function is called again before every attempt. Never stored. Default: none. */
  headers?: HeadersInput;
  /** Injectable fetch. Default the http port's (`globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Reconnect, replay and submit retry timing; each field's default is on {@link RetryOptions}. */
  retry?: RetryOptions;
  /** Stall watchdogs; each field's default is on {@link StallOptions}. */
  stall?: StallOptions;
  /** Size caps on what the network sends; each field's default is on {@link LimitOptions}. */
  limits?: LimitOptions;
  /** `'indexeddb'` (default when available), `'memory'`, or a custom {@link Store}. */
  storage?: 'indexeddb' | 'memory' | Store;
  /** Partition of local data, e.g. the user id: one database per namespace. Default `'default'`. */
  namespace?: string;
  /** Ask the browser for persistent storage (`navigator.storage.persist()`); the answer is a diagnostic. Default `false`. */
  persist?: boolean;
  /** Ended turns are deleted from local storage after this long, ms. Default 7 days. */
  retentionMs?: number;
  /** Flush buffered events after this many ms or {@link flushEvents} events, whichever first. Default 16. */
  flushMs?: number;
  /** Default 256. */
  flushEvents?: number;
  /** Submission timeouts; each field's default is on {@link OutboxOptions}. */
  outbox?: OutboxOptions;
  /** Delivery receipts (docs/protocol.md section 10); each field's default is on {@link ReceiptOptions}. */
  receipts?: ReceiptOptions;
  /** Receives every diagnostic (also available as `client.diagnostics`). Default: none. */
  onDiagnostic?: (diagnostic: Diagnostic) => void;
  /**
   * For tests and simulators: the platform the client talks to (clock, timers, http,
   * storage, tabs, random, network, page; see src/ports/index.ts). Every port left out is
   * the real one. Default: all real.
   */
  ports?: Partial<Ports>;
}

export interface OutboxOptions {
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** Give up on an entry this long after it was created, ms. Default 24 h. */
  maxAgeMs?: number;
}

export interface ReceiptOptions {
  /** Send a receipt for every turn followed to a verified end. Default true. */
  enabled?: boolean;
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** Give up on a receipt this long after the turn ended, ms. Default 24 h. */
  maxAgeMs?: number;
}

/** Storage health as the app sees it. */
export interface StorageStatus {
  /** `ok`: writes land; `degraded`: working in memory because storage failed; `memory`: memory by choice. */
  state: 'opening' | 'ok' | 'degraded' | 'memory';
  kind: string;
  cause?: LifelineError;
  /** Answer of `navigator.storage.persist()` when asked. */
  persisted?: boolean;
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

/** Everything that happens, typed. `at` is epoch ms. */
export type Diagnostic =
  | { type: 'connect'; at: number; turnId: string; attempt: number; lastEventId: number }
  | { type: 'open'; at: number; turnId: string; status: number }
  | { type: 'disconnect'; at: number; turnId: string; cause: LifelineError }
  | { type: 'retry'; at: number; scope: 'stream' | 'replay' | 'submit'; id: string; attempt: number; delayMs: number; cause?: LifelineError }
  | { type: 'resumed'; at: number; turnId: string; fromSeq: number }
  | { type: 'duplicate'; at: number; turnId: string; seq: number }
  | { type: 'gap'; at: number; turnId: string; expected: number; got: number }
  | { type: 'unknown-event'; at: number; turnId: string; eventType: string }
  | { type: 'protocol-error'; at: number; turnId?: string; error: LifelineError }
  | { type: 'integrity-mismatch'; at: number; turnId: string; expectedLength: number; actualLength: number }
  /** Web Crypto is missing (a page on plain HTTP): `turn.end` was checked by `textLength` only. */
  | { type: 'integrity-unchecked'; at: number; turnId: string }
  | { type: 'stalled'; at: number; turnId: string; watchdog: 'first-event' | 'idle'; silentMs: number }
  | { type: 'recovering'; at: number; turnId: string; path: RecoveryPath; fromSeq: number }
  | { type: 'recovered'; at: number; turnId: string; path: RecoveryPath; events: number }
  | { type: 'completed'; at: number; turnId: string; status: EndedTurnStatus }
  | { type: 'failed'; at: number; scope: 'stream' | 'replay' | 'submit'; id: string; error: LifelineError }
  | { type: 'submit'; at: number; operationId: string; conversationId: string; attempt: number }
  | { type: 'accepted'; at: number; operationId: string; turnId: string; replayed: boolean }
  | { type: 'outbox-replay'; at: number; count: number }
  | { type: 'storage'; at: number; status: StorageStatus }
  | { type: 'storage-error'; at: number; error: LifelineError }
  | { type: 'network'; at: number; online: boolean }
  | { type: 'auth-refresh'; at: number; turnId: string }
  /**
   * Tabs of one origin and namespace share one stream per turn: the `leader` tab holds
   * it and relays its events, a `watcher` applies what the leader relays.
   */
  | { type: 'shared'; at: number; turnId: string; role: 'leader' | 'watcher' }
  /**
   * A delivery receipt (docs/protocol.md section 10): `delivered` once the server recorded it,
   * `retry` before another attempt, `mismatch` when the server's text differs (the turn is
   * rebuilt from a full replay), `unsupported` once when the server predates receipts
   * (1.1: no receipt is sent again), `dropped` when refused or too old.
   */
  | { type: 'receipt'; at: number; turnId: string; outcome: 'delivered' | 'retry' | 'mismatch' | 'unsupported' | 'dropped'; delayMs?: number; error?: LifelineError }
  /** `client.drill` was called: `applied` false when the drill does not fit the turn's state (nothing was done). */
  | { type: 'drill'; at: number; turnId: string; drill: DrillKind; applied: boolean };

export type DiagnosticType = Diagnostic['type'];

/**
 * A fault a developer sets off on purpose, to watch the client recover (`client.drill`):
 * - `cut`: the turn's open stream is dropped as a network cut would drop it; the client
 *   reconnects with `Last-Event-ID` (docs/faults.md row 1).
 * - `stall`: the turn's open stream goes deaf (this client ignores every byte it sends, heartbeats
 *   included) until the stall watchdog notices, after the real stall timeout, and recovers as from
 *   a silent proxy (row 2).
 * - `replay`: a live turn is read from the server's log (docs/protocol.md section 3) from its last
 *   seq, then streamed again, as after a stall; an ended, verified turn is thrown away and rebuilt
 *   from seq 0, then checked against `turn.end` again (a receipt's `409` does the same).
 *
 * The server is not involved: nothing is cut or stalled anywhere but in this client.
 */
export type DrillKind = 'cut' | 'stall' | 'replay';

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
   * (`lifeline/devtools`) and tests. Answers whether it applied: `cut` and `stall` need the
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
