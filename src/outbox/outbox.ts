/**
 * The durable outbox: every submission is written to storage before it is posted, is
 * retried with the same Idempotency-Key until the server has it (or it fails visibly),
 * survives reloads and is sent by exactly one tab.
 *
 * How it works:
 * - State is one frozen array of entries sorted by `order`, changed only through `set`;
 *   every change of an entry's state goes through `save` (memory at once, then storage).
 *   This tab's storage operations run one after another (`chain`): an entry's `sending`
 *   write (awaited before each POST) lands after its first write, and a re-read sees
 *   every earlier write.
 * - One tab sends (Web Locks, else a lease in storage), only while entries are pending.
 *   Its single loop (`drain`) posts each conversation's head when due and sleeps until
 *   the next due time or change. Duplicate sending (a frozen lease holder waking up) is
 *   harmless: every attempt of an entry carries the same key.
 * - Per conversation, entries go out strictly in `order`: the first `queued`/`sending`
 *   entry is the head and nothing behind it is posted until it is accepted or failed. A
 *   `failed` entry does not block: it waits for `retry`/`discard` while later ones flow.
 * - Other tabs learn of changes through a BroadcastChannel: `null` means "re-read
 *   storage", an operation id means "deleted".
 * - Every tab hands the accepted entries it sees to `onAccepted`, once each, and deletes
 *   them `acceptedRetentionMs` after that settled. If `onAccepted` rejects the entry is
 *   kept, so the next page's `start()` offers it again.
 * - `retry(id)` of a failed entry re-arms it as if just created (createdAt = now,
 *   attempts = 0): `maxAgeMs` counts from there. Its operation id and position are kept.
 */
import { nanoid } from 'nanoid';
import { jitteredDelay, parseRetryAfter, resolveRetryPolicy } from '../core/backoff.js';
import { createEmitter } from '../core/subscribable.js';
import { asStorageError, LifelineError, ProtocolError, StorageError, TransportError, type LifelineErrorCode } from '../errors.js';
import { assertId, MAX_SUBMIT_BYTES, submitAnswerSchema, submitBodySchema, type MessageContent, type SubmitAnswer } from '../protocol/schemas.js';
import { outboxRecordSchema } from '../storage/records.js';
import type { OutboxRecord, Store } from '../storage/store.js';
import { endpoint, headersResolver, readServerError } from '../transport/http.js';
import { createBrowserNetworkMonitor, type NetworkMonitor } from '../transport/network.js';
import type { Diagnostic, ExternalStore, HeadersInput, OutboxEntry, RetryOptions } from '../types.js';

/** The storage the outbox needs; the client passes its current (possibly degraded) store. */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'>;

/** The part of `BroadcastChannel` the outbox uses. */
export interface OutboxChannel {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  close(): void;
}

export type { NetworkMonitor };

/** The part of `navigator.locks` the outbox uses. */
export interface OutboxLocks {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown>;
}

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
  /** How long an accepted entry stays listed (and stored) after `onAccepted` settled in this tab, ms. Default 10 000. */
  acceptedRetentionMs?: number;
  /** Partition: lock, lease and channel are named `lifeline-outbox:<namespace>`. Default `'default'`. */
  namespace?: string;
  /** Receives every diagnostic: submit, retry, accepted, failed, outbox-replay, storage-error. Must not throw. */
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
  /**
   * Where a new entry is also written synchronously until its IndexedDB write landed, so a
   * reload in between cannot lose it. Default `localStorage` when the page may use it; `null`: none.
   */
  journal?: Pick<Storage, 'getItem' | 'setItem' | 'removeItem' | 'key' | 'length'> | null;
  /** Default: the browser's `online`/`offline` events ({@link createBrowserNetworkMonitor}); `null`: always online. */
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
type Unstamped<D> = D extends unknown ? Omit<D, 'at'> : never;

const isPending = (entry: OutboxRecord): boolean => entry.state === 'queued' || entry.state === 'sending';

/** Retryable statuses with a code of their own; the others are `http_error`. */
const RETRY_CODES: Partial<Record<number, LifelineErrorCode>> = { 408: 'timeout', 429: 'rate_limited', 503: 'server_unavailable' };

/** What changes as an entry moves on: records read back equal to this are the same entry. */
const progress = (entry: OutboxRecord): string => [entry.state, entry.attempts, entry.nextAttemptAt, entry.createdAt].join();

/** `localStorage`, where the page may use it (reading it throws where cookies are blocked). */
function pageStorage(): Storage | undefined {
  try {
    return globalThis.localStorage ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Creates the durable outbox. Nothing is read or sent until {@link OutboxController.start}
 * or the first {@link OutboxController.enqueue}.
 */
export function createOutbox(deps: OutboxDeps): OutboxController {
  const {
    storage,
    onAccepted,
    network = createBrowserNetworkMonitor(),
    locks = (globalThis as { navigator?: { locks?: OutboxLocks } }).navigator?.locks,
    now = Date.now,
    random = Math.random,
    timeoutMs = 15e3,
    maxAgeMs = 864e5,
    acceptedRetentionMs = 1e4,
    leaseTtlMs = 1e4,
  } = deps;
  /** Pending entries older than this outbox were left by earlier pages. */
  const born = now();
  const policy = resolveRetryPolicy(deps.retry);
  const headers = headersResolver(deps.headers);
  const name = `lifeline-outbox:${deps.namespace ?? 'default'}`;
  const owner = nanoid();
  const journal = deps.journal === undefined ? pageStorage() : deps.journal;
  /** The journal's keys of this namespace: `lifeline-outbox:<namespace>:<operationId>`. */
  const journalKey = (operationId: string): string => `${name}:${operationId}`;
  const removeCopy = (key: string): void => {
    try {
      journal?.removeItem(key);
    } catch {
      // Storage refused: the next start imports it again, harmlessly (same key, same record).
    }
  };
  const unjournal = (operationId: string): void => removeCopy(journalKey(operationId));
  /** Cancels waiting for the sender role. */
  const stop = new AbortController();
  let disposed = false;
  const listeners = createEmitter<void>();
  /** Entries this tab is posting, with the abort of their request. */
  const busy = new Map<string, AbortController>();
  /** Discarded, deleted, cleared: never shown or written again. */
  const gone = new Set<string>();
  /** Acceptances handed to `onAccepted`. */
  const offered = new Set<string>();
  /** Every entry, sorted by order; replaced (never mutated) on every change. */
  let list: readonly OutboxRecord[] = Object.freeze([]);
  /** This tab's storage operations, one after another; never rejects. */
  let chain: Promise<unknown> = Promise.resolve();
  /** A storage read not started yet, which later requests share. */
  let reading: Promise<readonly LifelineError[]> | undefined;
  let started: Promise<void> | undefined;
  let leading = false;
  /** Ends the sender loop's sleep. */
  let wake: (() => void) | undefined;
  let online = network?.online() ?? true;
  /** Back online: the next look sends every head at once, backoff or not. */
  let hurry = false;

  const emit = (diagnostic: Unstamped<Diagnostic>): void => deps.emit({ ...diagnostic, at: now() } as Diagnostic);
  const find = (operationId: string): OutboxRecord | undefined => list.find((entry) => entry.operationId === operationId);

  /** Replaces (with no `entry`: removes) one entry of the snapshot and tells everyone. */
  const set = (operationId: string, entry?: OutboxRecord): void => {
    if (disposed) return;
    const rest = list.filter((other) => other.operationId !== operationId);
    list = Object.freeze((entry ? [...rest, entry] : rest).sort((a, b) => a.order - b.order));
    listeners.emit();
    poke();
  };

  /** Lets the sender look again: wakes its loop, or asks for the sender role while entries are pending. */
  const poke = (): void => {
    if (wake) return wake();
    if (leading || disposed || !list.some(isPending)) return;
    leading = true;
    // A lock manager that refuses (a sandboxed document) leads to the lease too.
    void (locks ? locks.request(name, { signal: stop.signal }, () => drain()).catch(leaseLoop) : leaseLoop()).finally(() => {
      leading = false;
      // Work may have arrived while stepping down.
      poke();
    });
  };

  const trouble = (error: unknown): StorageError => {
    const storageError = asStorageError(error, 'Outbox storage failed.');
    if (!disposed) emit({ type: 'storage-error', error: storageError });
    return storageError;
  };

  /**
   * Runs a storage write after this tab's earlier ones, then tells the other tabs:
   * `null` means "re-read storage", an operation id "deleted". Resolves with the error, if any.
   */
  const queue = (write: () => Promise<void>, notice: string | null): Promise<StorageError | void> =>
    (chain = chain.then(write).then(() => {
      if (!disposed) channel?.postMessage(notice);
    }, trouble)) as Promise<StorageError | void>;

  /** The one state-write path: memory at once, then storage. Resolves with the storage error, if any. */
  const save = (entry: OutboxRecord): Promise<StorageError | void> => {
    if (gone.has(entry.operationId)) return Promise.resolve();
    // Queued before the change shows, so a re-read asked for after the change also follows its write.
    const written = queue(() => storage.putOutbox(entry), null);
    set(entry.operationId, entry);
    // The link operation → turn is durable before anyone follows the turn.
    return written.finally(() => offer(entry));
  };

  const forget = (operationId: string): void => {
    gone.add(operationId);
    busy.get(operationId)?.abort();
    set(operationId);
  };

  /** Forgets an entry here and deletes it from storage and the other tabs. */
  const drop = async (operationId: string): Promise<void> => {
    if (gone.has(operationId) || !find(operationId)) return;
    forget(operationId);
    unjournal(operationId);
    await queue(() => storage.deleteOutbox(operationId), operationId);
  };

  /** Hands an acceptance to the client, once per entry; deletes the entry a while after that settled. */
  const offer = (entry: OutboxRecord): void => {
    const { operationId, conversationId, turnId, messageId } = entry;
    if (!turnId || !messageId || offered.has(operationId)) return;
    offered.add(operationId);
    void Promise.resolve()
      .then(() => onAccepted(entry, { turnId, messageId, conversationId, status: 'pending' }))
      .then(
        () => setTimeout(() => void drop(operationId), acceptedRetentionMs),
        // Kept in storage: the next page's start() offers it again.
        () => undefined,
      );
  };

  /**
   * Re-reads storage after this tab's writes so far and takes what changed there. Entries
   * changed here since the read was asked for keep the local state (their writes come
   * after it); entries missing from storage are kept (deletions arrive as notices, and a
   * store swapped for a fresh one must not wipe pending messages). Resolves with the
   * records storage skipped as corrupt.
   */
  const reload = (): Promise<readonly LifelineError[]> => {
    const before = list;
    return (reading ??= chain
      .then(async () => {
        reading = undefined;
        const { items, skipped } = await storage.loadOutbox();
        for (const stored of items) {
          const current = find(stored.operationId);
          // Entries only leave the list through `forget` (into `gone`), and are replaced, never mutated.
          if (gone.has(stored.operationId) || (current && (!before.includes(current) || progress(current) === progress(stored)))) continue;
          set(stored.operationId, stored);
          offer(stored);
        }
        return skipped;
      })
      .catch((error: unknown) => (trouble(error), [])));
  };

  // ------------------------------------------------------------------ sending (one tab)

  const takeLease = (): Promise<boolean> =>
    // A store that cannot answer counts as "lease held": sending twice is safe, never sending is not.
    storage.tryLease(name, owner, leaseTtlMs, now()).catch((error: unknown) => (trouble(error), true));

  /**
   * Leads where Web Locks are missing: takes the lease (free, expired or ours) or polls
   * it every half TTL. A tab that sleeps past its lease may briefly overlap with the next
   * holder, which is safe because every attempt carries the entry's key.
   */
  const leaseLoop = async (): Promise<void> => {
    while (!disposed) {
      if (await takeLease()) {
        await drain(true);
        await storage.releaseLease(name, owner).catch(trouble);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, leaseTtlMs / 2));
    }
  };

  /** The sender's loop: runs while entries are pending (on a lease: while it is renewed, every third of its TTL). */
  const drain = async (leased?: boolean): Promise<void> => {
    // Another tab may have sent or changed entries while this one waited.
    await reload();
    let renewAt = now() + leaseTtlMs / 3;
    while (!disposed && list.some(isPending)) {
      if (leased && now() >= renewAt) {
        if (!(await takeLease())) return;
        renewAt = now() + leaseTtlMs / 3;
      }
      const wakeAt = Math.min(pump(), leased ? renewAt : Infinity);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        // Capped: setTimeout fires at once past 2^31 - 1 ms.
        if (wakeAt < Infinity) timer = setTimeout(resolve, Math.min(wakeAt - now(), 2e9));
      });
      clearTimeout(timer);
      wake = undefined;
    }
  };

  /** Gives up entries past `maxAgeMs`, posts every due conversation head; answers when something is next due. */
  const pump = (): number => {
    const time = now();
    const heads = new Set<string>();
    let wakeAt = Infinity;
    for (const entry of list) {
      if (!isPending(entry)) continue;
      const deadline = entry.createdAt + maxAgeMs;
      const free = !busy.has(entry.operationId);
      // Checked for every pending entry, head or not, so a stuck queue fails visibly.
      if (free && time >= deadline) {
        fail(entry, expired(entry));
        continue;
      }
      wakeAt = Math.min(wakeAt, deadline);
      // The first pending entry of a conversation is its head; nothing behind it goes.
      if (heads.has(entry.conversationId)) continue;
      heads.add(entry.conversationId);
      if (!free || !online) continue;
      if (entry.nextAttemptAt > time && !hurry) wakeAt = Math.min(wakeAt, entry.nextAttemptAt);
      else void attempt(entry);
    }
    hurry = false;
    return wakeAt;
  };

  const attempt = async (entry: OutboxRecord): Promise<void> => {
    const { operationId, conversationId, content } = entry;
    const abort = new AbortController();
    busy.set(operationId, abort);
    const sending: OutboxRecord = { ...entry, state: 'sending', attempts: entry.attempts + 1 };
    try {
      await save(sending);
      if (abort.signal.aborted) return;
      emit({ type: 'submit', operationId, conversationId, attempt: sending.attempts });
      // What the attempt came to: the server's answer, or an error worth another attempt
      // with the same key (`retry`, after at least `retryAfterMs` when the server says so) or not.
      let outcome: SubmitAnswer | LifelineError;
      let replayed = false;
      let retry = true;
      let retryAfterMs: number | undefined;
      try {
        const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(timeoutMs)]);
        // The timeout covers the app's headers function too: a token refresh that never
        // answers must not hold the conversation's queue for ever.
        const own = await Promise.race([headers(), new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)))]);
        // Set, not spread: an app's `Content-Type` would otherwise be sent beside ours.
        const sent = new Headers(own);
        sent.set('content-type', 'application/json');
        sent.set('idempotency-key', operationId);
        const response = await (deps.fetch ?? fetch)(endpoint(deps.baseUrl, `/conversations/${conversationId}/messages`), {
          method: 'POST',
          headers: sent,
          body: JSON.stringify({ content }),
          signal,
        });
        const { status, headers: answerHeaders } = response;
        replayed = answerHeaders.get('idempotent-replayed') === 'true';
        retryAfterMs = parseRetryAfter(answerHeaders.get('retry-after'), now());
        if (response.ok) {
          const parsed = submitAnswerSchema.safeParse(await response.json().catch(() => undefined));
          // No protocol answer (a captive portal's page) may not come from Lifeline: retried. An
          // answer for another conversation would come back the same on every retry: failed.
          retry = !parsed.success;
          outcome =
            parsed.success && parsed.data.conversationId === conversationId
              ? parsed.data
              : new ProtocolError('invalid_response', 'Invalid submit answer.', { status });
        } else {
          // The same request may succeed later after 408, 409 (key still in flight), 425, 429, 5xx.
          retry = [408, 409, 425, 429].includes(status) || status > 499;
          const server = await readServerError(response);
          outcome = new TransportError(retry ? (RETRY_CODES[status] ?? 'http_error') : 'submission_rejected', `Submit answered ${status}.`, {
            status,
            ...(server && { serverCode: server.code }),
          });
        }
      } catch (cause) {
        // Refused, offline, timed out (some browsers say AbortError), a failing headers function: all may heal.
        const timeout = ['TimeoutError', 'AbortError'].includes((cause as Error | undefined)?.name ?? '');
        outcome = new TransportError(timeout ? 'timeout' : 'network_error', 'The submission did not get through.', { cause });
      }
      // Discarded, cleared or disposed meanwhile.
      if (abort.signal.aborted) return;
      const time = now();
      if (!(outcome instanceof LifelineError)) {
        const { turnId, messageId } = outcome;
        emit({ type: 'accepted', operationId, turnId, replayed });
        const { lastError: _, ...rest } = sending;
        void save({ ...rest, state: 'accepted', turnId, messageId, acceptedAt: time });
        return;
      }
      const delayMs = Math.max(jitteredDelay(policy, sending.attempts, random), Math.min(retryAfterMs ?? 0, policy.maxRetryAfterMs));
      // No retry is scheduled past the entry's age limit: it fails now instead.
      if (retry && time + delayMs < entry.createdAt + maxAgeMs) {
        emit({ type: 'retry', scope: 'submit', id: operationId, attempt: sending.attempts + 1, delayMs, cause: outcome });
        void save({ ...sending, state: 'queued', nextAttemptAt: time + delayMs, lastError: outcome.toJSON() });
      } else fail(sending, retry ? expired(sending, outcome) : outcome);
    } finally {
      busy.delete(operationId);
      poke();
    }
  };

  /** The give-up error of an entry past `maxAgeMs`, with the last error's status and server code. */
  const expired = (entry: OutboxRecord, cause?: LifelineError): LifelineError =>
    new TransportError('retry_exhausted', 'Not accepted within maxAgeMs.', { ...(cause?.toJSON() ?? entry.lastError), cause });

  const fail = (entry: OutboxRecord, error: LifelineError): void => {
    emit({ type: 'failed', scope: 'submit', id: entry.operationId, error });
    void save({ ...entry, state: 'failed', lastError: error.toJSON() });
  };

  // ------------------------------------------------------------------ wiring and public API

  const channel = deps.channel === undefined ? (typeof BroadcastChannel === 'function' ? new BroadcastChannel(name) : undefined) : deps.channel?.(name);
  channel?.addEventListener('message', ({ data }) => (typeof data === 'string' ? forget(data) : void reload()));
  const unsubscribe = network?.subscribe((next) => {
    hurry = online = next;
    poke();
  });

  /** The journal's entries of this namespace (other tabs' in-flight ones too), removed as they are read. */
  const journaled = (): [key: string, value: unknown][] => {
    const found: [string, unknown][] = [];
    try {
      for (let i = journal?.length ?? 0; i--; ) {
        const key = journal!.key(i);
        if (!key?.startsWith(name + ':')) continue;
        let value: unknown;
        try {
          value = JSON.parse(journal!.getItem(key) ?? 'null');
        } catch {
          // Left undefined: reported as corrupt below.
        }
        found.push([key, value]);
      }
    } catch {
      // Storage refused (blocked cookies): IndexedDB alone.
    }
    return found;
  };

  /**
   * Moves into storage the entries a page journaled but did not get written (a reload right
   * after `send()`). One already stored is left as stored: it may have moved on since. A copy
   * is removed only once storage holds its entry, so a reload during this loses nothing either.
   */
  const adopt = async (): Promise<void> => {
    const copies = journaled();
    if (!copies.length) return;
    const { items } = await storage.loadOutbox().catch((error: unknown) => (trouble(error), { items: [] }));
    const stored = new Set(items.map((entry) => entry.operationId));
    for (const [key, value] of copies) {
      const parsed = outboxRecordSchema.safeParse(value);
      if (!parsed.success) trouble(new StorageError('storage_corrupt_record', 'Skipped a corrupt journaled outbox entry.'));
      else if (!stored.has(parsed.data.operationId) && (await queue(() => storage.putOutbox(parsed.data as OutboxRecord), null))) continue;
      removeCopy(key);
    }
  };

  /** Logout: forgets every entry, journal included; resolves once writes on their way landed. */
  const clear = async (): Promise<void> => {
    for (const entry of list) forget(entry.operationId);
    for (const [key] of journaled()) removeCopy(key);
    await chain;
  };

  return {
    entries: { getSnapshot: () => list, subscribe: listeners.subscribe },

    enqueue(conversationId, content) {
      assertId('A conversation id', conversationId);
      // zod's output is a private copy: the app may mutate its object after sending.
      const parsed = submitBodySchema.safeParse({ content });
      if (!parsed.success || new Blob([JSON.stringify(parsed.data)]).size > MAX_SUBMIT_BYTES) {
        throw new LifelineError('invalid_argument', 'content must be a string or JSON object of at most 64 KiB.');
      }
      const time = now();
      const operationId = nanoid();
      // Its first attempt writes `sending` before posting, and writes land in order: never posted before this write.
      const entry: OutboxRecord = {
        operationId,
        conversationId,
        content: parsed.data.content,
        createdAt: time,
        // Timestamps, so entries from several tabs interleave in time order.
        order: Math.max(time, ...list.map((entry) => entry.order + 1)),
        attempts: 0,
        nextAttemptAt: time,
        state: 'queued',
      };
      try {
        // Synchronous: durable before `send()` returns, whatever happens to the page next.
        journal?.setItem(journalKey(operationId), JSON.stringify(entry));
      } catch {
        // Full or refused: IndexedDB alone, as before.
      }
      const written = save(entry).then((error) => {
        if (error) throw error;
        unjournal(operationId);
      });
      // Callers may ignore `written`; the failure is already a diagnostic.
      written.catch(() => undefined);
      return { operationId, written };
    },

    async retry(operationId) {
      const entry = find(operationId);
      const time = now();
      if (entry?.state === 'failed' || entry?.state === 'queued') {
        const { lastError: _, ...rest } = entry;
        // A failed entry starts over, as if just created.
        await save({ ...rest, state: 'queued', nextAttemptAt: time, ...(entry.state === 'failed' && { createdAt: time, attempts: 0 }) });
      }
    },

    async discard(operationId) {
      if (find(operationId)?.state !== 'accepted') await drop(operationId);
    },

    start: () =>
      (started ??= adopt().then(reload).then((skipped) => {
        for (const error of skipped) emit({ type: 'storage-error', error });
        const count = list.filter((entry) => isPending(entry) && entry.createdAt < born).length;
        if (count) emit({ type: 'outbox-replay', count });
      })),

    clear,

    dispose() {
      disposed = true;
      stop.abort();
      // Storage and the journal keep every entry for the next page.
      for (const entry of list) forget(entry.operationId);
      unsubscribe?.();
      channel?.close();
      wake?.();
    },
  };
}
