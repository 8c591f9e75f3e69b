/**
 * The outbox's contract with the client: what {@link createOutbox} needs and what it
 * hands back. The behaviour is described in outbox.ts.
 */
import type { RetryPolicy } from '../core/backoff.js';
import type { MessageContent, SubmitAnswer } from '../protocol/schemas.js';
import type { Store } from '../storage/store.js';
import type { KeyValueStorage } from '../ports/storage.js';
import type { LockManagerLike, TabChannel } from '../ports/tabs.js';
import type { Timers } from '../ports/timers.js';
import type { HttpContext } from '../transport/http.js';
import type { NetworkMonitor } from '../ports/network.js';
import type { Diagnostic, ExternalStore, OutboxEntry } from '../types.js';

/** The storage the outbox needs; the client passes its current (possibly degraded) store. */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'>;

/** The part of `BroadcastChannel` the outbox uses. */
export type OutboxChannel = TabChannel;

/** The part of `navigator.locks` the outbox uses (see tabs/leadership.ts). */
export type OutboxLocks = LockManagerLike;

/**
 * What {@link createOutbox} needs from the client: its request plumbing, resolved once for
 * every request the client makes (the follower deps fit), and the outbox's own settings.
 */
export interface OutboxDeps extends HttpContext {
  storage: OutboxStorage;
  /** Backoff timing. `firstRetryJitterMs` and `maxElapsedMs` do not apply here (see `maxAgeMs`). */
  retry: RetryPolicy;
  /** Uniform in [0, 1), for jitter. */
  random: () => number;
  /** Mints operation ids (Idempotency-Keys) and lease owners. */
  newId: () => string;
  timers: Timers;
  /** Partition: lock, lease and channel are named `lifeline-outbox:<namespace>`. */
  namespace: string;
  /** Online/offline; `null`: always online. */
  network: NetworkMonitor | null;
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** An entry still not accepted this long after it was created fails with `retry_exhausted`, ms. Default 24 h. */
  maxAgeMs?: number;
  /** How long an accepted entry stays listed (and stored) after `onAccepted` settled in this tab, ms. Default 10 000. */
  acceptedRetentionMs?: number;
  /** Receives every diagnostic: submit, retry, accepted, failed, outbox-replay, storage-error. Must not throw. */
  emit: (diagnostic: Diagnostic) => void;
  /**
   * Called once per entry this outbox sees accepted: its own answer, or an acceptance by
   * another tab or an earlier page read from storage (then `answer` is rebuilt from the
   * record). Must be idempotent across tabs (follow the turn, persist the link).
   */
  onAccepted: (entry: OutboxEntry, answer: SubmitAnswer) => void | Promise<void>;
  /** Default `navigator.locks` when present; `null` forces the storage lease. */
  locks?: OutboxLocks | null;
  /** Default `new BroadcastChannel(name)` when present (the tabs port); `null` disables cross-tab notices. */
  channel?: ((name: string) => OutboxChannel | undefined) | null;
  /**
   * Where a new entry is also written synchronously until its IndexedDB write landed, so a
   * reload in between cannot lose it. Default `localStorage` when the page may use it; `null`: none.
   */
  journal?: KeyValueStorage | null;
  /** Lease time-to-live for the no-Web-Locks fallback, ms. Default 10 000. */
  leaseTtlMs?: number;
}

/** What `enqueue` hands back at once. */
export interface Enqueued {
  /** The entry's Idempotency-Key (21 characters, from the random port). */
  readonly operationId: string;
  /**
   * Resolves once the entry is in storage (it is never posted before). Rejects with a
   * {@link StorageError} when storage refused it: the entry is then sent from memory
   * and will not survive a reload. Safe to ignore.
   */
  readonly written: Promise<void>;
}

/** The outbox as the client drives it. Its methods need no `this` (they may be passed around). */
export interface OutboxController {
  /** Every entry (queued, sending, failed, briefly accepted) by order; a stable array while unchanged. */
  readonly entries: ExternalStore<readonly OutboxEntry[]>;
  /**
   * Adds a submission. The entry shows as `queued` at once and is posted only after it is
   * in storage. Throws `invalid_argument` for a bad conversation id or content (not a
   * string or JSON object, or over 64 KiB). Not to be called after {@link dispose} (the
   * client refuses that itself).
   */
  enqueue(conversationId: string, content: MessageContent): Enqueued;
  /**
   * Sends again now: a failed entry is re-armed (fresh `maxAgeMs`, attempts from 0), an
   * entry waiting out a backoff goes at once. No effect on unknown, sending or accepted entries.
   */
  retry(operationId: string): Promise<void>;
  /**
   * Removes an entry not yet accepted, aborting its request if this tab is posting it
   * (a request the server already committed still makes its turn). No effect on unknown
   * or accepted entries.
   */
  discard(operationId: string): Promise<void>;
  /** Loads what earlier pages left (emits `outbox-replay`) and starts sending it. Idempotent. */
  start(): Promise<void>;
  /**
   * Forgets every entry in memory and aborts this tab's requests (logout). Resolves once
   * writes already on their way have landed, so the caller can then clear storage for
   * good: nothing forgotten is written again.
   */
  clear(): Promise<void>;
  /** Aborts requests and timers and steps down as sender; storage keeps every entry. */
  dispose(): void;
}

/** A diagnostic before `emit` stamps its time. */
export type Unstamped<D> = D extends unknown ? Omit<D, 'at'> : never;

/** The outbox's own emit: stamps the time, then hands the diagnostic to {@link OutboxDeps.emit}. */
export type Emit = (diagnostic: Unstamped<Diagnostic>) => void;
