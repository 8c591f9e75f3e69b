/**
 * The durable outbox: every submission is written to storage before it is posted, is
 * retried with the same Idempotency-Key until the server has it (or it fails visibly),
 * survives reloads and is sent by exactly one tab.
 *
 * Decisions (see also the report of issue 6):
 * - Per conversation, entries go out strictly in `order`: the first `queued`/`sending`
 *   entry is the conversation's head and nothing behind it is posted until it is
 *   accepted or failed. A `failed` entry does not block: it waits for the user's
 *   `retry`/`discard` while later messages flow. Conversations do not wait for each other.
 * - One tab drains at a time (Web Locks, else a lease in storage) and only while there
 *   is work. Duplicate sending (a frozen lease holder waking up) is harmless: every
 *   attempt of an entry carries the same key, and the server creates one turn per key.
 * - Accepted entries stay (state `accepted`, with turnId/messageId) until `onAccepted`
 *   has settled and `acceptedRetentionMs` has passed, then the sending tab deletes them.
 *   If `onAccepted` rejects the entry is kept, so the next page's `start()` offers it again.
 * - `retry(id)` of a failed entry re-arms it as if just created (createdAt = now,
 *   attempts = 0): `maxAgeMs` counts from there. Its operation id and position are kept.
 */
import { nanoid } from 'nanoid';
import { jitteredDelay, resolveRetryPolicy, type RetryPolicy } from '../core/backoff.js';
import { createEmitter, reportListenerError } from '../core/subscribable.js';
import { asStorageError, CancelledError, LifelineError, TransportError, type StorageError } from '../errors.js';
import { assertId, MAX_SUBMIT_BYTES, submitBodySchema, type MessageContent, type SubmitAnswer } from '../protocol/schemas.js';
import type { OutboxRecord, Store } from '../storage/store.js';
import { endpoint } from '../transport/http.js';
import { createBrowserNetworkMonitor, type NetworkMonitor } from '../transport/network.js';
import type { Diagnostic, ExternalStore, HeadersInput, OutboxEntry, RetryOptions } from '../types.js';
import { classifyResponse, classifyThrown, type AttemptOutcome } from './classify.js';
import { createLeaseLeadership, createLockLeadership, type Leadership, type OutboxLocks } from './leadership.js';

/** The storage the outbox needs; the client passes its current (possibly degraded) store. */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'>;

/** The part of `BroadcastChannel` the outbox uses. */
export interface OutboxChannel {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  close(): void;
}

export type { NetworkMonitor };

/** What {@link createOutbox} needs from the client. */
export interface OutboxDeps {
  storage: OutboxStorage;
  /** Base URL of the protocol endpoints, e.g. `/api`. */
  baseUrl: string;
  /** Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Resolved afresh before every attempt, never stored. */
  headers?: HeadersInput;
  /** Backoff timing. `firstRetryJitterMs` and `maxElapsedMs` do not apply here (see `maxAgeMs`). */
  retry?: RetryOptions;
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** An entry still not accepted this long after it was created fails with `retry_exhausted`, ms. Default 24 h. */
  maxAgeMs?: number;
  /** How long an accepted entry stays listed after `onAccepted` settled, ms. Default 10 000. */
  acceptedRetentionMs?: number;
  /** Partition: lock, lease and channel are named `lifeline-outbox:<namespace>`. Default `'default'`. */
  namespace?: string;
  /** Receives every diagnostic: submit, retry, accepted, failed, outbox-replay, network, storage-error. */
  emit: (diagnostic: Diagnostic) => void;
  /**
   * Called once per entry this outbox sees accepted: its own answer, or an acceptance by
   * another tab or an earlier page read from storage (then `answer` is rebuilt from the
   * record). Must be idempotent across tabs (follow the turn, persist the link).
   */
  onAccepted: (entry: OutboxEntry, answer: SubmitAnswer) => void | Promise<void>;
  /** Epoch ms. Default `Date.now`. */
  now?: () => number;
  /** Uniform in [0, 1), for jitter. Default `Math.random`. */
  random?: () => number;
  /** Default `navigator.locks` when present; `null` forces the storage lease. */
  locks?: OutboxLocks | null;
  /** Default `new BroadcastChannel(name)` when present; `null` disables cross-tab notices. */
  channel?: ((name: string) => OutboxChannel) | null;
  /** Default: browser `online`/`offline` events ({@link createBrowserNetworkMonitor}); always online where there are none. */
  network?: NetworkMonitor | null;
  /** Lease time-to-live for the no-Web-Locks fallback, ms. Default 10 000. */
  leaseTtlMs?: number;
}

/** What `enqueue` hands back at once. */
export interface Enqueued {
  /** The entry's Idempotency-Key (nanoid, 21 characters). */
  readonly operationId: string;
  /**
   * Resolves once the entry is in storage (it is never posted before). Rejects with a
   * {@link StorageError} when storage refused it: the entry is then sent from memory
   * and will not survive a reload. Safe to ignore.
   */
  readonly written: Promise<void>;
}

/** The outbox as the client drives it. */
export interface OutboxController {
  /** Every entry (queued, sending, failed, briefly accepted) by order; a stable array while unchanged. */
  readonly entries: ExternalStore<readonly OutboxEntry[]>;
  /**
   * Adds a submission. The entry shows as `queued` at once and is posted only after it is
   * in storage. Throws `invalid_argument` for a bad conversation id or content (not a
   * string or JSON object, or over 64 KiB), `disposed` after {@link dispose}.
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

type Message = { type: 'changed' } | { type: 'deleted'; operationId: string };

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_AGE_MS = 24 * 60 * 60 * 1000;
const DEFAULT_ACCEPTED_RETENTION_MS = 10_000;
const DEFAULT_LEASE_TTL_MS = 10_000;
const LEAD_RETRY_MS = 1_000;

const encoder = new TextEncoder();

function isPending(record: OutboxRecord): boolean {
  return record.state === 'queued' || record.state === 'sending';
}

function compareOrder(a: OutboxRecord, b: OutboxRecord): number {
  return a.order - b.order || a.createdAt - b.createdAt || (a.operationId < b.operationId ? -1 : a.operationId > b.operationId ? 1 : 0);
}

/** Structural equality of JSON-shaped values (records read back from storage are fresh objects). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((key) => Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

function withoutError(record: OutboxRecord): OutboxRecord {
  const { lastError: _dropped, ...rest } = record;
  return rest;
}

/** `promise`, or the signal's reason once it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function defaultLocks(): OutboxLocks | undefined {
  const locks = (globalThis as { navigator?: { locks?: OutboxLocks } }).navigator?.locks;
  return typeof locks?.request === 'function' ? locks : undefined;
}

function defaultChannel(name: string): OutboxChannel | undefined {
  return typeof BroadcastChannel === 'function' ? new BroadcastChannel(name) : undefined;
}

class Outbox implements OutboxController {
  readonly entries: ExternalStore<readonly OutboxEntry[]>;

  readonly #storage: OutboxStorage;
  readonly #url: (conversationId: string) => string;
  readonly #fetch: typeof fetch;
  readonly #headers: HeadersInput | undefined;
  readonly #policy: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #maxAgeMs: number;
  readonly #retentionMs: number;
  readonly #emitDiagnostic: (diagnostic: Diagnostic) => void;
  readonly #onAccepted: OutboxDeps['onAccepted'];
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #leadership: Leadership;
  readonly #channel: OutboxChannel | undefined;
  readonly #unsubscribeNetwork: (() => void) | undefined;
  readonly #disposed = new AbortController();
  readonly #listeners = createEmitter<void>();

  #records = new Map<string, OutboxRecord>();
  #snapshot: readonly OutboxEntry[] = Object.freeze([]);
  #online: boolean;
  #maxOrder = 0;
  #started: Promise<void> | undefined;

  /** Entries enqueued here whose first write has not settled: never posted yet. */
  readonly #unwritten = new Set<string>();
  /** Entries enqueued here (not "left by earlier pages"). */
  readonly #mine = new Set<string>();
  /** Removed here or announced removed: a stale read must not bring them back. */
  readonly #tombstones = new Set<string>();
  /** Attempts this tab has on the wire, to abort on discard. */
  readonly #inFlight = new Map<string, AbortController>();
  /** Local writes per entry: a storage read that overlaps one must not undo it. */
  readonly #pendingWrites = new Map<string, number>();
  readonly #writeSerial = new Map<string, number>();
  /** Storage writes on their way (clear() waits for them). */
  readonly #writes = new Set<Promise<void>>();
  #serial = 0;
  /** Acceptances handed to `onAccepted`: offering (not settled yet) and settled. */
  readonly #offering = new Set<string>();
  readonly #settled = new Set<string>();
  readonly #deleting = new Set<string>();
  readonly #reportedSkips = new Set<string>();

  #leading = false;
  #leadRequested = false;
  #wake: (() => void) | undefined;
  #reloadRunning: Promise<void> | undefined;
  #reloadQueued: Promise<void> | undefined;

  constructor(deps: OutboxDeps) {
    this.#storage = deps.storage;
    this.#url = (conversationId) => endpoint(deps.baseUrl, `/conversations/${encodeURIComponent(conversationId)}/messages`);
    this.#fetch = deps.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#headers = deps.headers;
    this.#policy = resolveRetryPolicy(deps.retry);
    this.#timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxAgeMs = deps.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.#retentionMs = deps.acceptedRetentionMs ?? DEFAULT_ACCEPTED_RETENTION_MS;
    this.#emitDiagnostic = deps.emit;
    this.#onAccepted = deps.onAccepted;
    this.#now = deps.now ?? Date.now;
    this.#random = deps.random ?? Math.random;
    const name = `lifeline-outbox:${deps.namespace ?? 'default'}`;

    const locks = deps.locks === undefined ? defaultLocks() : deps.locks;
    const lease = createLeaseLeadership({
      storage: this.#storage,
      name,
      owner: nanoid(),
      ttlMs: deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
      now: this.#now,
      onError: (error) => this.#storageTrouble(error, 'The outbox lease could not be read or written.'),
    });
    this.#leadership = locks ? createLockLeadership(locks, name, lease) : lease;

    const channel = deps.channel === undefined ? defaultChannel(name) : deps.channel?.(name);
    this.#channel = channel;
    channel?.addEventListener('message', (event) => this.#onMessage(event.data));

    const network = deps.network === undefined ? createBrowserNetworkMonitor() : (deps.network ?? undefined);
    this.#online = network?.online() ?? true;
    this.#unsubscribeNetwork = network?.subscribe((online) => this.#onNetwork(online));

    this.entries = {
      getSnapshot: () => this.#snapshot,
      subscribe: (listener) => this.#listeners.subscribe(listener),
    };
  }

  // ------------------------------------------------------------------ public API

  enqueue(conversationId: string, content: MessageContent): Enqueued {
    if (this.#disposed.signal.aborted) throw new CancelledError('disposed', 'The outbox was disposed.');
    assertId('conversationId', conversationId);
    const parsed = submitBodySchema.safeParse({ content });
    if (!parsed.success) {
      throw new LifelineError('invalid_argument', 'content must be a string or a JSON object.', { details: parsed.error.issues });
    }
    const body = JSON.stringify(parsed.data);
    const size = encoder.encode(body).byteLength;
    if (size > MAX_SUBMIT_BYTES) {
      throw new LifelineError('invalid_argument', `The message is ${size} bytes encoded, over the limit of ${MAX_SUBMIT_BYTES}.`, {
        details: { size, limit: MAX_SUBMIT_BYTES },
      });
    }
    const now = this.#now();
    // Orders are timestamps so entries from several tabs interleave in time order.
    const order = Math.max(now, this.#maxOrder + 1);
    this.#maxOrder = order;
    const record: OutboxRecord = {
      operationId: nanoid(),
      conversationId,
      // A private copy: the app may mutate its object after sending.
      content: (JSON.parse(body) as { content: MessageContent }).content,
      createdAt: now,
      order,
      attempts: 0,
      nextAttemptAt: now,
      state: 'queued',
    };
    const id = record.operationId;
    this.#mine.add(id);
    this.#unwritten.add(id);
    this.#set(record);
    const written = this.#write(record).finally(() => {
      this.#unwritten.delete(id);
      this.#changed();
    });
    // Callers may ignore `written`; the failure is already a diagnostic.
    written.catch(() => undefined);
    this.#changed();
    return { operationId: id, written };
  }

  async retry(operationId: string): Promise<void> {
    const record = this.#records.get(operationId);
    if (record === undefined || this.#disposed.signal.aborted) return;
    const now = this.#now();
    let next: OutboxRecord;
    if (record.state === 'failed') {
      next = { ...withoutError(record), state: 'queued', createdAt: now, attempts: 0, nextAttemptAt: now };
    } else if (record.state === 'queued' && record.nextAttemptAt > now) {
      next = { ...record, nextAttemptAt: now };
    } else {
      return;
    }
    this.#set(next);
    this.#changed();
    await this.#persist(next);
  }

  async discard(operationId: string): Promise<void> {
    const record = this.#records.get(operationId);
    if (record === undefined || record.state === 'accepted' || this.#disposed.signal.aborted) return;
    this.#forget(operationId);
    this.#changed();
    await this.#remove(operationId);
  }

  start(): Promise<void> {
    this.#started ??= this.#reload().then(() => {
      let count = 0;
      for (const record of this.#records.values()) if (isPending(record) && !this.#mine.has(record.operationId)) count += 1;
      if (count > 0) this.#emit({ type: 'outbox-replay', at: this.#now(), count });
      this.#changed();
    });
    return this.#started;
  }

  async clear(): Promise<void> {
    for (const operationId of [...this.#records.keys()]) this.#forget(operationId);
    this.#changed();
    await Promise.allSettled(this.#writes);
  }

  dispose(): void {
    if (this.#disposed.signal.aborted) return;
    this.#disposed.abort(new CancelledError('disposed', 'The outbox was disposed.'));
    this.#unsubscribeNetwork?.();
    this.#channel?.close();
    this.#wakeUp();
  }

  // ------------------------------------------------------------------ state

  /** A throwing diagnostics listener must not break sending. */
  #emit(diagnostic: Diagnostic): void {
    try {
      this.#emitDiagnostic(diagnostic);
    } catch (error) {
      reportListenerError(error);
    }
  }

  #set(record: OutboxRecord): OutboxRecord {
    const frozen = Object.freeze(record);
    this.#records.set(record.operationId, frozen);
    if (record.order > this.#maxOrder) this.#maxOrder = record.order;
    return frozen;
  }

  #forget(operationId: string): void {
    this.#tombstones.add(operationId);
    this.#records.delete(operationId);
    this.#inFlight.get(operationId)?.abort();
  }

  /** Publishes a new snapshot if anything changed, then lets the sender act on it. */
  #changed(): void {
    if (this.#disposed.signal.aborted) return;
    const next = [...this.#records.values()].sort(compareOrder);
    const previous = this.#snapshot;
    if (next.length !== previous.length || next.some((record, i) => record !== previous[i])) {
      this.#snapshot = Object.freeze(next);
      this.#listeners.emit();
    }
    if (this.#leading) this.#wakeUp();
    else this.#requestLead();
  }

  /** Work only a sender can do: pending entries, and accepted ones to clean up. */
  #hasWork(): boolean {
    for (const record of this.#records.values()) {
      if (isPending(record)) return true;
      const id = record.operationId;
      if (record.state === 'accepted' && (this.#offering.has(id) || this.#settled.has(id))) return true;
    }
    return this.#inFlight.size > 0 || this.#deleting.size > 0;
  }

  // ------------------------------------------------------------------ sending (leader only)

  #requestLead(): void {
    if (this.#leadRequested || this.#disposed.signal.aborted || !this.#hasWork()) return;
    this.#leadRequested = true;
    this.#leadership.hold((lost) => this.#lead(lost), this.#disposed.signal).then(
      () => {
        this.#leadRequested = false;
        // Work may have arrived between the last look and stepping down.
        this.#requestLead();
      },
      (error: unknown) => {
        this.#storageTrouble(error, 'The outbox could not take the sender role.');
        // Not at once: a failure that repeats must not spin.
        setTimeout(() => {
          this.#leadRequested = false;
          this.#requestLead();
        }, LEAD_RETRY_MS);
      },
    );
  }

  async #lead(lost: AbortSignal): Promise<void> {
    this.#leading = true;
    try {
      // Another tab may have sent or changed entries while this one waited.
      await this.#reload();
      while (!this.#disposed.signal.aborted && !lost.aborted) {
        const wakeAt = this.#pump();
        if (!this.#hasWork()) return;
        await this.#sleep(wakeAt, lost);
      }
    } finally {
      this.#leading = false;
    }
  }

  /** Starts every due attempt and clean-up; answers when something is next due. */
  #pump(): number | undefined {
    const now = this.#now();
    let wakeAt: number | undefined;
    const dueAt = (at: number): void => {
      wakeAt = wakeAt === undefined ? at : Math.min(wakeAt, at);
    };
    const heads = new Map<string, OutboxRecord>();
    for (const record of [...this.#records.values()].sort(compareOrder)) {
      const id = record.operationId;
      if (record.state === 'accepted') {
        if (!this.#settled.has(id) || this.#deleting.has(id)) continue;
        const at = (record.acceptedAt ?? record.createdAt) + this.#retentionMs;
        if (at <= now) void this.#cleanUp(record);
        else dueAt(at);
        continue;
      }
      if (!isPending(record) || this.#inFlight.has(id) || this.#unwritten.has(id)) {
        if (isPending(record) && !heads.has(record.conversationId)) heads.set(record.conversationId, record);
        continue;
      }
      // Age is checked for every pending entry, head or not, so a stuck queue fails visibly.
      const deadline = record.createdAt + this.#maxAgeMs;
      if (now >= deadline) {
        void this.#giveUp(record, record.lastError);
        continue;
      }
      dueAt(deadline);
      if (heads.has(record.conversationId)) continue;
      heads.set(record.conversationId, record);
      if (!this.#online) continue;
      if (record.nextAttemptAt <= now) void this.#attempt(record);
      else dueAt(record.nextAttemptAt);
    }
    return wakeAt;
  }

  #sleep(until: number | undefined, lost: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        lost.removeEventListener('abort', done);
        if (this.#wake === done) this.#wake = undefined;
        resolve();
      };
      this.#wake = done;
      lost.addEventListener('abort', done, { once: true });
      if (until !== undefined) timer = setTimeout(done, Math.max(0, until - this.#now()));
    });
  }

  #wakeUp(): void {
    this.#wake?.();
  }

  async #attempt(record: OutboxRecord): Promise<void> {
    const id = record.operationId;
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    try {
      const sending = this.#set({ ...record, state: 'sending', attempts: record.attempts + 1 });
      this.#changed();
      await this.#persist(sending);
      if (abort.signal.aborted || this.#disposed.signal.aborted) return;
      this.#emit({ type: 'submit', at: this.#now(), operationId: id, conversationId: sending.conversationId, attempt: sending.attempts });
      const outcome = await this.#post(sending, abort.signal);
      if (outcome.kind === 'cancelled' || this.#disposed.signal.aborted || this.#tombstones.has(id)) return;
      if (outcome.kind === 'accepted') await this.#accept(sending, outcome.answer, outcome.replayed);
      else if (outcome.kind === 'retry') await this.#retryLater(sending, outcome.error, outcome.retryAfterMs);
      else await this.#fail(sending, outcome.error);
    } finally {
      this.#inFlight.delete(id);
      this.#changed();
    }
  }

  async #post(record: OutboxRecord, cancel: AbortSignal): Promise<AttemptOutcome> {
    const signal = AbortSignal.any([cancel, this.#disposed.signal, AbortSignal.timeout(this.#timeoutMs)]);
    try {
      // The timeout covers a headers function (a token refresh) that never answers, too.
      const own = typeof this.#headers === 'function' ? await untilAborted(Promise.resolve(this.#headers()), signal) : (this.#headers ?? {});
      const headers = new Headers(own);
      headers.set('content-type', 'application/json');
      headers.set('idempotency-key', record.operationId);
      const response = await this.#fetch(this.#url(record.conversationId), {
        method: 'POST',
        headers,
        body: JSON.stringify({ content: record.content }),
        signal,
      });
      return await classifyResponse(response, record.conversationId, this.#now());
    } catch (error) {
      return classifyThrown(error, cancel.aborted || this.#disposed.signal.aborted);
    }
  }

  async #accept(record: OutboxRecord, answer: SubmitAnswer, replayed: boolean): Promise<void> {
    const accepted = this.#set({
      ...withoutError(record),
      state: 'accepted',
      turnId: answer.turnId,
      messageId: answer.messageId,
      acceptedAt: this.#now(),
    });
    this.#changed();
    this.#emit({ type: 'accepted', at: this.#now(), operationId: record.operationId, turnId: answer.turnId, replayed });
    // The link operation → turn is durable before anyone follows the turn.
    await this.#persist(accepted);
    this.#offer(accepted, answer);
  }

  async #retryLater(record: OutboxRecord, error: LifelineError, retryAfterMs: number | undefined): Promise<void> {
    const now = this.#now();
    let delayMs = jitteredDelay(this.#policy, record.attempts, this.#random);
    if (retryAfterMs !== undefined) delayMs = Math.max(delayMs, Math.min(retryAfterMs, this.#policy.maxRetryAfterMs));
    if (now + delayMs >= record.createdAt + this.#maxAgeMs) {
      await this.#giveUp(record, error.toJSON(), error);
      return;
    }
    const next = this.#set({ ...record, state: 'queued', nextAttemptAt: now + delayMs, lastError: error.toJSON() });
    this.#changed();
    this.#emit({ type: 'retry', at: now, scope: 'submit', id: record.operationId, attempt: record.attempts + 1, delayMs, cause: error });
    await this.#persist(next);
  }

  async #giveUp(record: OutboxRecord, last: OutboxRecord['lastError'], cause?: LifelineError): Promise<void> {
    const error = new TransportError(
      'retry_exhausted',
      `The message was not accepted within ${this.#maxAgeMs} ms (${record.attempts} attempts)` +
        (last === undefined ? '.' : `; last error: ${last.code}.`),
      {
        ...(cause === undefined ? {} : { cause }),
        ...(last?.status === undefined ? {} : { status: last.status }),
        ...(last?.serverCode === undefined ? {} : { serverCode: last.serverCode }),
      },
    );
    await this.#fail(record, error);
  }

  async #fail(record: OutboxRecord, error: LifelineError): Promise<void> {
    const failed = this.#set({ ...record, state: 'failed', lastError: error.toJSON() });
    this.#changed();
    this.#emit({ type: 'failed', at: this.#now(), scope: 'submit', id: record.operationId, error });
    await this.#persist(failed);
  }

  /** Hands an acceptance to the client once per entry and remembers when it settled. */
  #offer(record: OutboxRecord, answer: SubmitAnswer): void {
    const id = record.operationId;
    if (this.#offering.has(id) || this.#settled.has(id)) return;
    this.#offering.add(id);
    void Promise.resolve()
      .then(() => this.#onAccepted(record, answer))
      .then(
        () => this.#settled.add(id),
        // Kept in storage: the next page's start() offers it again.
        () => undefined,
      )
      .finally(() => {
        this.#offering.delete(id);
        this.#changed();
      });
  }

  async #cleanUp(record: OutboxRecord): Promise<void> {
    const id = record.operationId;
    this.#deleting.add(id);
    try {
      this.#forget(id);
      this.#changed();
      await this.#remove(id);
    } finally {
      this.#deleting.delete(id);
      this.#changed();
    }
  }

  // ------------------------------------------------------------------ storage and other tabs

  /** Writes an entry; the write counts as "local" so an overlapping read cannot undo it. */
  async #write(record: OutboxRecord): Promise<void> {
    const id = record.operationId;
    // Discarded or cleared: writing it would bring it back.
    if (this.#tombstones.has(id)) return;
    this.#pendingWrites.set(id, (this.#pendingWrites.get(id) ?? 0) + 1);
    this.#writeSerial.set(id, ++this.#serial);
    let put: Promise<void> | undefined;
    try {
      put = this.#storage.putOutbox(record);
      this.#writes.add(put);
      await put;
      this.#announce({ type: 'changed' });
    } catch (error) {
      throw this.#storageTrouble(error, 'An outbox entry could not be written.');
    } finally {
      if (put !== undefined) this.#writes.delete(put);
      const left = (this.#pendingWrites.get(id) ?? 1) - 1;
      if (left === 0) this.#pendingWrites.delete(id);
      else this.#pendingWrites.set(id, left);
    }
  }

  /** A state write: on failure the entry goes on in memory (already reported). */
  async #persist(record: OutboxRecord): Promise<void> {
    await this.#write(record).catch(() => undefined);
  }

  async #remove(operationId: string): Promise<void> {
    try {
      await this.#storage.deleteOutbox(operationId);
    } catch (error) {
      this.#storageTrouble(error, 'An outbox entry could not be deleted.');
    }
    this.#announce({ type: 'deleted', operationId });
  }

  #storageTrouble(error: unknown, message: string): StorageError {
    const storageError = asStorageError(error, message);
    if (!this.#disposed.signal.aborted) this.#emit({ type: 'storage-error', at: this.#now(), error: storageError });
    return storageError;
  }

  #announce(message: Message): void {
    if (this.#disposed.signal.aborted) return;
    try {
      this.#channel?.postMessage(message);
    } catch {
      // A closed channel only costs other tabs their live view; storage stays right.
    }
  }

  #onMessage(data: unknown): void {
    if (this.#disposed.signal.aborted || typeof data !== 'object' || data === null) return;
    const message = data as Partial<Message> & { operationId?: unknown };
    if (message.type === 'deleted' && typeof message.operationId === 'string') {
      if (this.#records.has(message.operationId)) {
        this.#forget(message.operationId);
        this.#changed();
      } else {
        this.#tombstones.add(message.operationId);
      }
    } else if (message.type === 'changed') {
      void this.#reload();
    }
  }

  #onNetwork(online: boolean): void {
    if (this.#disposed.signal.aborted || online === this.#online) return;
    this.#online = online;
    this.#emit({ type: 'network', at: this.#now(), online });
    if (online) {
      // Back online: whatever waits out a backoff goes now.
      const now = this.#now();
      for (const record of this.#records.values()) {
        if (record.state === 'queued' && record.nextAttemptAt > now) this.#set({ ...record, nextAttemptAt: now });
      }
    }
    this.#changed();
  }

  /** Re-reads storage, coalescing bursts of notices into at most one extra read. */
  #reload(): Promise<void> {
    if (this.#reloadRunning !== undefined) {
      this.#reloadQueued ??= this.#reloadRunning.then(() => {
        this.#reloadQueued = undefined;
        return this.#reload();
      });
      return this.#reloadQueued;
    }
    this.#reloadRunning = this.#read().finally(() => {
      this.#reloadRunning = undefined;
    });
    return this.#reloadRunning;
  }

  async #read(): Promise<void> {
    const startSerial = this.#serial;
    const writingAtStart = new Set(this.#pendingWrites.keys());
    let loaded: Awaited<ReturnType<OutboxStorage['loadOutbox']>>;
    try {
      loaded = await this.#storage.loadOutbox();
    } catch (error) {
      this.#storageTrouble(error, 'The outbox could not be read.');
      return;
    }
    if (this.#disposed.signal.aborted) return;
    for (const skipped of loaded.skipped) {
      if (this.#reportedSkips.has(skipped.message)) continue;
      this.#reportedSkips.add(skipped.message);
      this.#emit({ type: 'storage-error', at: this.#now(), error: skipped });
    }
    for (const stored of loaded.items) {
      const id = stored.operationId;
      if (this.#tombstones.has(id)) continue;
      // Local knowledge wins while this tab is writing or posting the entry.
      const local =
        this.#inFlight.has(id) ||
        this.#unwritten.has(id) ||
        this.#pendingWrites.has(id) ||
        writingAtStart.has(id) ||
        (this.#writeSerial.get(id) ?? 0) > startSerial;
      if (local) continue;
      const current = this.#records.get(id);
      const record = current !== undefined && sameJson(current, stored) ? current : this.#set(stored);
      if (record.state === 'accepted' && record.turnId !== undefined && record.messageId !== undefined) {
        this.#offer(record, { turnId: record.turnId, messageId: record.messageId, conversationId: record.conversationId, status: 'pending' });
      }
    }
    // Entries missing from storage are kept: deletions arrive as `deleted` notices, and a
    // store swapped for a fresh one (degraded to memory) must not wipe pending messages.
    this.#changed();
  }
}

/**
 * Creates the durable outbox. Nothing is read or sent until {@link OutboxController.start}
 * or the first {@link OutboxController.enqueue}.
 */
export function createOutbox(deps: OutboxDeps): OutboxController {
  return new Outbox(deps);
}
