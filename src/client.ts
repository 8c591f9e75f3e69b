/**
 * `createLifeline()`: wires the pure core, the transport and storage into the client
 * the app holds. Importing this module touches no browser global; everything
 * platform-specific is looked up when a client is created or used.
 */
import { resolveRetryPolicy } from './core/backoff.js';
import { createBatcher, createEmitter, reportListenerError } from './core/subscribable.js';
import { asLifelineError, CancelledError, LifelineError } from './errors.js';
import { DEFAULT_MAX_EVENT_SIZE } from './protocol/decode.js';
import { assertId, type SubmitAnswer, type TurnObject } from './protocol/schemas.js';
import { createIndexedDbStore } from './storage/indexeddb-store.js';
import { createMemoryStore } from './storage/memory-store.js';
import { createPersistence, type OutboxStorage, type Persistence } from './storage/persistence.js';
import { createOutbox, type OutboxController } from './outbox/outbox.js';
import { createOutboxView, createSubmissionTracker, filteredStore, isUnaccepted, type SubmissionTracker } from './outbox/views.js';
import { headersResolver } from './transport/http.js';
import { createBrowserNetworkMonitor, type NetworkMonitor } from './transport/network.js';
import { listTurns } from './transport/requests.js';
import { streamLimitsFor } from './transport/sse-connection.js';
import { TurnFollower, type FollowerDeps } from './turn-follower.js';
import type {
  Conversation,
  ConversationItem,
  ConversationSnapshot,
  Diagnostic,
  ExternalStore,
  LifelineClient,
  LifelineOptions,
  Outbox,
  OutboxEntry,
  StorageStatus,
  Subscribable,
  Turn,
  TurnSnapshot,
} from './types.js';

/**
 * Creates a Lifeline client. Throws `invalid_argument` for unusable options; everything
 * else that goes wrong later is a diagnostic and a visible status, never a throw.
 *
 * @example
 * const client = createLifeline({ baseUrl: '/api', headers: async () => ({ authorization: `Bearer ${await token()}` }) });
 * const turn = client.turn(turnId);
 * turn.subscribe(() => render(turn.getSnapshot().text));
 */
export function createLifeline(options: LifelineOptions): LifelineClient {
  return new Client(options);
}

/** A numeric option, `fallback` when absent; `invalid_argument` unless > 0 (or 0 when `zero`). */
function option(name: string, value: number | undefined, fallback: number, zero = false): number {
  value ??= fallback;
  if (!(value > 0 || (zero && value === 0))) throw new LifelineError('invalid_argument', `Invalid ${name}.`);
  return value;
}

/** Notifies at most once per animation frame while the page is visible, else once per microtask. */
function notificationScheduler(callback: () => void): void {
  if (globalThis.document?.visibilityState === 'visible' && 'requestAnimationFrame' in globalThis) requestAnimationFrame(callback);
  else queueMicrotask(callback);
}

const disposedError = (): CancelledError => new CancelledError('disposed', 'The client was disposed.');

class Client implements LifelineClient {
  readonly ready: Promise<void>;
  readonly diagnostics: Subscribable<Diagnostic>;
  readonly turns: ExternalStore<readonly TurnSnapshot[]>;
  readonly storageStatus: ExternalStore<StorageStatus>;
  readonly outbox: Outbox;

  readonly #options: LifelineOptions;
  readonly #diagnostics = createEmitter<Diagnostic>();
  readonly #persistence: Persistence;
  readonly #network: NetworkMonitor = createBrowserNetworkMonitor();
  readonly #followers = new Map<string, TurnFollower>();
  readonly #deps: FollowerDeps;
  readonly #conversations = new Map<string, Conversation>();
  /** Aborted on dispose: removes the page listeners and cancels sleeps. */
  readonly #life = new AbortController();
  #turnList: readonly TurnSnapshot[] | undefined;
  readonly #turnListeners = createEmitter<void>();
  readonly #turnBatcher = createBatcher(() => {
    this.#turnList = undefined;
    this.#turnListeners.emit();
  }, notificationScheduler);
  readonly #outbox: OutboxController;
  readonly #submissions: SubmissionTracker;

  constructor(options: LifelineOptions) {
    if (typeof options?.baseUrl !== 'string') throw new LifelineError('invalid_argument', 'baseUrl must be a string.');
    this.#options = options;
    const { baseUrl, storage = 'indexeddb', namespace = 'default', limits = {}, stall = {} } = options;
    const now = Date.now;
    const fetch: typeof globalThis.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const headers = headersResolver(options.headers);
    const emit = (diagnostic: Diagnostic): void => this.#emit(diagnostic);
    const maxEventSize = option('maxEventSize', limits.maxEventSize, DEFAULT_MAX_EVENT_SIZE);

    this.#persistence = createPersistence({
      // A refused or missing IndexedDB degrades to memory, once, visibly.
      store: storage === 'memory' ? createMemoryStore() : storage === 'indexeddb' ? createIndexedDbStore({ namespace }) : storage,
      memoryByChoice: storage === 'memory' || (typeof storage === 'object' && storage.kind === 'memory'),
      flushMs: option('flushMs', options.flushMs, 16, true),
      flushEvents: option('flushEvents', options.flushEvents, 256),
      retentionMs: option('retentionMs', options.retentionMs, 7 * 24 * 3600_000),
      now,
      emit,
    });
    this.#deps = {
      baseUrl,
      fetch,
      headers,
      retry: resolveRetryPolicy(options.retry),
      firstEventMs: option('firstEventMs', stall.firstEventMs, 15_000),
      idleMs: option('idleMs', stall.idleMs, 25_000),
      maxEventSize,
      reducerLimits: { maxTextLength: option('maxTurnTextLength', limits.maxTurnTextLength, 16 * 1024 * 1024) },
      streamLimits: streamLimitsFor(maxEventSize),
      replayLimit: 1000,
      replayMaxBytes: Math.max(8 * 1024 * 1024, 4 * maxEventSize),
      // Consecutive failed stream attempts (no events between) before the turn is replayed.
      replayAfterFailures: 3,
      now,
      random: Math.random,
      network: this.#network,
      emit,
      persistence: this.#persistence,
      schedule: notificationScheduler,
      onChange: () => this.#turnBatcher.request(),
    };

    this.diagnostics = { subscribe: this.#diagnostics.subscribe };
    this.storageStatus = this.#persistence.status;
    this.turns = {
      getSnapshot: () =>
        (this.#turnList ??= Object.freeze(
          [...this.#followers.values()]
            .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
            .map((follower) => follower.getSnapshot()),
        )),
      subscribe: this.#turnListeners.subscribe,
    };
    // Durable submissions behind conversation.send (issue 6).
    this.#outbox = createOutbox({
      storage: this.outboxStorage,
      baseUrl,
      fetch,
      headers,
      ...(options.retry && { retry: options.retry }),
      ...options.outbox,
      namespace,
      network: this.#network,
      // Online/offline is reported once, below.
      emit: (diagnostic) => diagnostic.type === 'network' || emit(diagnostic),
      onAccepted: (entry, answer) => {
        if (!this.#disposed) this.#submissions.accept(entry.operationId, this.followAccepted(entry, answer));
      },
    });
    this.#submissions = createSubmissionTracker(this.#outbox);
    this.outbox = createOutboxView(this.#outbox, isUnaccepted);

    // Browser signals: online/offline for every follower; flush storage when the page goes away.
    const signal = this.#life.signal;
    const flush = (): void => void this.#persistence.flush();
    signal.addEventListener(
      'abort',
      this.#network.subscribe((online) => {
        emit({ type: 'network', at: now(), online });
        for (const follower of this.#followers.values()) follower.onNetwork(online);
      }),
    );
    // Flushing on any visibility change is harmless; the one that matters is to `hidden`.
    globalThis.addEventListener?.('pagehide', flush, { signal });
    globalThis.document?.addEventListener('visibilitychange', flush, { signal });
    this.ready = this.#start();
  }

  // ------------------------------------------------------------------ public API

  turn(turnId: string): Turn {
    this.#assertUsable();
    assertId('turnId', turnId);
    const existing = this.#followers.get(turnId);
    if (existing) {
      existing.reopen();
      return existing;
    }
    const follower = this.#createFollower(turnId);
    void this.#boot(follower);
    return follower;
  }

  conversation(conversationId: string): Conversation {
    this.#assertUsable();
    assertId('conversationId', conversationId);
    let view = this.#conversations.get(conversationId);
    if (!view) {
      this.#conversations.set(conversationId, (view = this.#conversationView(conversationId)));
      void this.#hydrate(conversationId);
    }
    return view;
  }

  async recover(conversationId: string): Promise<readonly TurnSnapshot[]> {
    this.#assertUsable();
    assertId('conversationId', conversationId);
    await this.ready;
    const deps = this.#deps;
    const listed = await listTurns(deps, conversationId, {
      policy: deps.retry,
      clock: deps,
      onRetry: (attempt, delayMs, cause) => this.#emit({ type: 'retry', at: Date.now(), scope: 'replay', id: conversationId, attempt, delayMs, cause }),
      sleep: (ms) => this.#sleep(ms),
    });
    await Promise.all(listed.map((turn) => this.#adopt(turn)));
    return listed.flatMap((turn) => this.#followers.get(turn.id)?.getSnapshot() ?? []);
  }

  async clearStorage(): Promise<void> {
    this.#assertUsable();
    for (const follower of this.#followers.values()) follower.dispose();
    this.#followers.clear();
    this.#turnBatcher.request();
    await this.#outbox.clear();
    await this.#persistence.clear();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#life.abort();
    for (const follower of this.#followers.values()) follower.dispose();
    this.#submissions.dispose();
    this.#outbox.dispose();
    this.#turnBatcher.cancel();
    void this.#persistence.dispose();
  }

  // ------------------------------------------------------------------ outbox seams

  /**
   * The outbox's `onAccepted`: follows the accepted turn, records which submission and
   * conversation it belongs to (written to storage at once, so a reload before its first
   * event still resumes it), and returns the turn handle for `Submission.accepted`.
   */
  followAccepted(entry: Pick<OutboxEntry, 'operationId' | 'conversationId'> & Partial<Pick<OutboxEntry, 'content'>>, answer: SubmitAnswer): Turn {
    // The turn's row keeps the message: the outbox deletes the entry soon after acceptance.
    if (entry.content !== undefined) this.#persistence.setMessage(answer.turnId, { content: entry.content, operationId: entry.operationId });
    const turn = this.turn(answer.turnId) as TurnFollower;
    turn.setOrigin({ conversationId: entry.conversationId, messageId: answer.messageId, operationId: entry.operationId });
    return turn;
  }

  /** The outbox's `storage`, routed to the current (possibly degraded) store. */
  get outboxStorage(): OutboxStorage {
    return this.#persistence.outbox;
  }

  // ------------------------------------------------------------------ internals

  async #start(): Promise<void> {
    await this.#persistence.open();
    if (this.#options.persist) {
      const persisted = await (globalThis.navigator?.storage?.persist?.() ?? Promise.reject()).catch(() => false);
      this.#persistence.setPersisted(persisted);
    }
    const loaded = await this.#persistence.loadUnfinished();
    // Entries earlier pages left: listed now, sent (by the one sending tab) from here on.
    await this.#outbox.start();
    const restored = loaded.filter(({ record }) => !this.#followers.has(record.id));
    for (const turn of restored) this.#createFollower(turn.record.id).restore(turn);
    void this.#persistence.sweep();
    // Stored text is visible now; the network starts after `ready`.
    queueMicrotask(() => {
      if (this.#disposed) return;
      for (const { record } of restored) void this.#followers.get(record.id)?.start();
      for (const id of new Set(restored.map(({ record }) => record.conversationId))) {
        this.recover(id).catch((error: unknown) => {
          if (!this.#disposed) this.#emit({ type: 'failed', at: Date.now(), scope: 'replay', id, error: asLifelineError(error) });
        });
      }
    });
  }

  async #boot(follower: TurnFollower): Promise<void> {
    await this.ready;
    if (this.#disposed || this.#followers.get(follower.id) !== follower) return;
    const stored = await this.#persistence.loadTurn(follower.id);
    // Not over what it already holds (restored at start, or events arrived meanwhile).
    if (stored && follower.lastSeq === 0 && !follower.done) follower.restore(stored);
    void follower.start();
  }

  /**
   * Shows a conversation's stored turns without the network: ended turns are not restored
   * at start, yet the conversation lists them (and their messages) after a reload.
   */
  async #hydrate(conversationId: string): Promise<void> {
    await this.ready;
    for (const record of this.#disposed ? [] : await this.#persistence.loadConversation(conversationId)) {
      if (this.#disposed || this.#followers.has(record.id)) continue;
      const follower = this.#createFollower(record.id);
      // Folded: the row is the whole turn, nothing more to read.
      if (record.text !== undefined) follower.restore({ record, events: [] });
      void this.#boot(follower);
    }
  }

  /** One listed turn: adopt it when not held, revive it when it failed, else replay alongside. */
  async #adopt(turn: TurnObject): Promise<void> {
    const held = this.#followers.get(turn.id);
    if (held?.done) return held.revive();
    if (held) return held.replayAlongside();
    const follower = this.#createFollower(turn.id);
    follower.setOrigin({ conversationId: turn.conversationId, messageId: turn.messageId });
    const stored = await this.#persistence.loadTurn(turn.id);
    if (stored) follower.restore(stored);
    await follower.start(true);
  }

  /** Waits `ms` between retries; rejects `disposed` as soon as the client is. */
  #sleep(ms: number): Promise<void> {
    this.#assertUsable();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      this.#life.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(disposedError());
      });
    });
  }

  get #disposed(): boolean {
    return this.#life.signal.aborted;
  }

  #createFollower(turnId: string): TurnFollower {
    const follower = new TurnFollower(turnId, this.#deps);
    this.#followers.set(turnId, follower);
    this.#turnBatcher.request();
    return follower;
  }

  #emit(diagnostic: Diagnostic): void {
    this.#diagnostics.emit(diagnostic);
    try {
      this.#options.onDiagnostic?.(diagnostic);
    } catch (error) {
      reportListenerError(error);
    }
  }

  #assertUsable(): void {
    if (this.#disposed) throw disposedError();
  }

  /** One conversation's interleaved items: each user message before the turn it started, pending ones last. */
  #conversationView(id: string): Conversation {
    const persistence = this.#persistence;
    // This conversation's entries, accepted ones included (they link a message to its turn).
    const entries = filteredStore(this.#outbox.entries, (entry) => entry.conversationId === id);
    const send = (content: OutboxEntry['content']) => {
      this.#assertUsable();
      return this.#submissions.track(this.#outbox.enqueue(id, content).operationId);
    };
    let snapshot: ConversationSnapshot = Object.freeze({ id, items: Object.freeze([]) });
    let sources: unknown[] = [];
    return {
      id,
      outbox: createOutboxView(this.#outbox, (entry) => entry.conversationId === id && isUnaccepted(entry)),
      send,
      resend(turnId) {
        // The message is stored with its turn's row: the outbox forgets accepted entries.
        const message = persistence.message(turnId);
        if (!message) throw new LifelineError('invalid_argument', 'No stored message started this turn.');
        return send(message.content);
      },
      getSnapshot: () => {
        const turns = this.turns.getSnapshot();
        const pending = entries.getSnapshot();
        if (sources[0] === turns && sources[1] === pending) return snapshot;
        sources = [turns, pending];
        const items: ConversationItem[] = [];
        const placed = new Set<string>();
        for (const turn of turns) {
          if (turn.conversationId !== id) continue;
          const user = persistence.message(turn.id);
          if (user) {
            const submission = pending.find((entry) => entry.turnId === turn.id);
            // A row without the operation id still gets a key of its own (':' is in no id).
            const key = user.operationId ?? `${turn.id}:user`;
            items.push({ role: 'user', key, content: user.content, ...(submission && { submission }) });
            placed.add(key);
          }
          items.push({ role: 'assistant', key: turn.id, turn });
        }
        for (const submission of pending) {
          if (!placed.has(submission.operationId)) items.push({ role: 'user', key: submission.operationId, content: submission.content, submission });
        }
        // Same items, same snapshot: a change to another conversation's turn is not ours.
        const old = snapshot.items;
        if (items.length !== old.length || items.some((item, i) => item.key !== old[i]!.key || item.turn !== old[i]!.turn || item.submission !== old[i]!.submission)) {
          snapshot = Object.freeze({ id, items: Object.freeze(items) });
        }
        return snapshot;
      },
      subscribe: (listener) => {
        const unsubscribe = [this.#turnListeners.subscribe(listener), entries.subscribe(listener)];
        return () => unsubscribe.forEach((stop) => stop());
      },
    };
  }
}
