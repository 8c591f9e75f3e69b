/**
 * `createLifeline()`: wires the pure core, the transport and storage into the client
 * the app holds. Importing this module touches no browser global; everything
 * platform-specific is looked up when a client is created or used.
 */
import { resolveRetryPolicy } from './core/backoff.js';
import { createBatcher, createEmitter, reportListenerError } from './core/subscribable.js';
import { asLifelineError, CancelledError, LifelineError } from './errors.js';
import { DEFAULT_MAX_EVENT_SIZE } from './protocol/decode.js';
import { assertId, type MessageContent, type SubmitAnswer, type TurnObject } from './protocol/schemas.js';
import { createIndexedDbStore } from './storage/indexeddb-store.js';
import { createMemoryStore } from './storage/memory-store.js';
import { createPersistence, type OutboxStorage, type Persistence, type TurnMessage } from './storage/persistence.js';
import { createOutbox, type OutboxController } from './outbox/outbox.js';
import { createOutboxView, createSubmissionTracker, filteredStore, isUnaccepted, type SubmissionTracker } from './outbox/views.js';
import type { Store } from './storage/store.js';
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
  Submission,
  Turn,
  TurnSnapshot,
} from './types.js';

/** Default of {@link StallOptions.firstEventMs}. */
const DEFAULT_FIRST_EVENT_MS = 15_000;
/** Default of {@link StallOptions.idleMs}. */
const DEFAULT_IDLE_MS = 25_000;
/** Default of {@link LimitOptions.maxTurnTextLength}. */
const DEFAULT_MAX_TURN_TEXT = 16 * 1024 * 1024;
/** Default of {@link LifelineOptions.retentionMs}: 7 days. */
const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** Events per replay page. */
const REPLAY_LIMIT = 1000;
/** Consecutive failed stream attempts (no events between) before the turn is replayed. */
const REPLAY_AFTER_FAILURES = 3;

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

function positive(name: string, value: number | undefined, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowZero && value === 0)) {
    throw new LifelineError('invalid_argument', `${name} must be a number ${allowZero ? '≥' : '>'} 0, got ${String(value)}.`);
  }
  return value;
}

/** Notifies at most once per animation frame while the page is visible, else once per microtask. */
function notificationScheduler(callback: () => void): void {
  const scope = globalThis as { requestAnimationFrame?: (callback: () => void) => unknown; document?: { visibilityState?: string } };
  if (typeof scope.requestAnimationFrame === 'function' && scope.document?.visibilityState === 'visible') {
    scope.requestAnimationFrame(callback);
  } else {
    queueMicrotask(callback);
  }
}

function resolveStore(options: LifelineOptions): { store: Store; memoryByChoice: boolean } {
  const choice = options.storage ?? 'indexeddb';
  if (choice === 'memory') return { store: createMemoryStore(), memoryByChoice: true };
  if (choice === 'indexeddb') {
    // Opening fails where IndexedDB is missing or refused: the client then degrades to memory, once, visibly.
    return { store: createIndexedDbStore({ namespace: options.namespace ?? 'default' }), memoryByChoice: false };
  }
  return { store: choice, memoryByChoice: choice.kind === 'memory' };
}

class Client implements LifelineClient {
  readonly ready: Promise<void>;
  readonly diagnostics: Subscribable<Diagnostic>;
  readonly turns: ExternalStore<readonly TurnSnapshot[]>;
  readonly storageStatus: ExternalStore<StorageStatus>;
  readonly outbox: Outbox;

  readonly #options: LifelineOptions;
  readonly #diagnostics = createEmitter<Diagnostic>();
  readonly #persistence: Persistence;
  readonly #network: NetworkMonitor;
  readonly #followers = new Map<string, TurnFollower>();
  readonly #followerDeps: FollowerDeps;
  readonly #http: { baseUrl: string; fetch: typeof fetch; headers: () => Promise<Record<string, string>>; now: () => number };
  /** Turns restored from storage at start (their storage was already read). */
  readonly #restored = new Set<string>();
  readonly #conversations = new Map<string, ConversationView>();
  readonly #cleanups: (() => void)[] = [];
  #turnList: readonly TurnSnapshot[] | undefined;
  readonly #turnListeners = createEmitter<void>();
  readonly #turnBatcher;
  readonly #outbox: OutboxController;
  readonly #submissions: SubmissionTracker;
  #disposed = false;

  constructor(options: LifelineOptions) {
    if (typeof options !== 'object' || options === null) throw new LifelineError('invalid_argument', 'createLifeline needs an options object.');
    if (typeof options.baseUrl !== 'string') throw new LifelineError('invalid_argument', 'baseUrl must be a string such as "/api".');
    this.#options = options;
    const now = Date.now;
    const retry = resolveRetryPolicy(options.retry);
    const maxEventSize = positive('limits.maxEventSize', options.limits?.maxEventSize, DEFAULT_MAX_EVENT_SIZE);
    const maxTextLength = positive('limits.maxTurnTextLength', options.limits?.maxTurnTextLength, DEFAULT_MAX_TURN_TEXT);
    const fetchImpl: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const headers = headersResolver(options.headers);
    const { store, memoryByChoice } = resolveStore(options);
    this.#http = { baseUrl: options.baseUrl, fetch: fetchImpl, headers, now };

    this.#persistence = createPersistence({
      store,
      memoryByChoice,
      flushMs: positive('flushMs', options.flushMs, 16, true),
      flushEvents: positive('flushEvents', options.flushEvents, 256),
      retentionMs: positive('retentionMs', options.retentionMs, DEFAULT_RETENTION_MS),
      now,
      emit: (diagnostic) => this.#emit(diagnostic),
    });
    this.#network = createBrowserNetworkMonitor();
    this.#turnBatcher = createBatcher(() => {
      this.#turnList = undefined;
      this.#turnListeners.emit();
      for (const view of this.#conversations.values()) view.invalidate();
    }, notificationScheduler);

    this.#followerDeps = {
      baseUrl: options.baseUrl,
      fetch: fetchImpl,
      headers,
      retry,
      firstEventMs: positive('stall.firstEventMs', options.stall?.firstEventMs, DEFAULT_FIRST_EVENT_MS),
      idleMs: positive('stall.idleMs', options.stall?.idleMs, DEFAULT_IDLE_MS),
      maxEventSize,
      reducerLimits: { maxTextLength },
      streamLimits: streamLimitsFor(maxEventSize),
      replayLimit: REPLAY_LIMIT,
      replayMaxBytes: Math.max(8 * 1024 * 1024, 4 * maxEventSize),
      replayAfterFailures: REPLAY_AFTER_FAILURES,
      now,
      random: Math.random,
      network: this.#network,
      emit: (diagnostic) => this.#emit(diagnostic),
      persistence: this.#persistence,
      schedule: notificationScheduler,
      onChange: () => this.#turnBatcher.request(),
    };

    this.diagnostics = { subscribe: (listener) => this.#diagnostics.subscribe(listener) };
    this.storageStatus = this.#persistence.status;
    this.turns = {
      getSnapshot: () => (this.#turnList ??= Object.freeze(this.#sortedFollowers().map((follower) => follower.getSnapshot()))),
      subscribe: (listener) => this.#turnListeners.subscribe(listener),
    };
    // ---- outbox wiring (issue 6): durable submissions behind conversation.send ----
    this.#outbox = createOutbox({
      storage: this.outboxStorage,
      baseUrl: options.baseUrl,
      fetch: fetchImpl,
      headers,
      ...(options.retry === undefined ? {} : { retry: options.retry }),
      ...(options.outbox?.timeoutMs === undefined ? {} : { timeoutMs: options.outbox.timeoutMs }),
      ...(options.outbox?.maxAgeMs === undefined ? {} : { maxAgeMs: options.outbox.maxAgeMs }),
      namespace: options.namespace ?? 'default',
      network: this.#network,
      // Online/offline is reported once, by #listen.
      emit: (diagnostic) => {
        if (diagnostic.type !== 'network') this.#emit(diagnostic);
      },
      onAccepted: (entry, answer) => {
        if (this.#disposed) return;
        this.#submissions.accept(entry.operationId, this.followAccepted(entry, answer));
      },
    });
    this.#submissions = createSubmissionTracker(this.#outbox);
    this.outbox = createOutboxView(this.#outbox, isUnaccepted);
    // ---- end outbox wiring ----

    this.#listen();
    this.ready = this.#start();
  }

  // ------------------------------------------------------------------ public API

  turn(turnId: string): Turn {
    this.#assertUsable();
    assertId('A turn id', turnId);
    const existing = this.#followers.get(turnId);
    if (existing !== undefined) {
      existing.reopen();
      return existing;
    }
    const follower = this.#createFollower(turnId);
    void this.#boot(follower);
    return follower;
  }

  conversation(conversationId: string): Conversation {
    this.#assertUsable();
    assertId('A conversation id', conversationId);
    let view = this.#conversations.get(conversationId);
    if (view === undefined) {
      view = new ConversationView(conversationId, () => this.turns.getSnapshot(), (listener) => this.#turnListeners.subscribe(listener), {
        outbox: createOutboxView(this.#outbox, (entry) => entry.conversationId === conversationId && isUnaccepted(entry)),
        entries: filteredStore(this.#outbox.entries, (entry) => entry.conversationId === conversationId),
        send: (content) => {
          this.#assertUsable();
          return this.#submissions.track(this.#outbox.enqueue(conversationId, content).operationId);
        },
        stored: (turnId) => this.#persistence.message(turnId),
      });
      this.#conversations.set(conversationId, view);
      void this.#hydrate(conversationId);
    }
    return view;
  }

  async recover(conversationId: string): Promise<readonly TurnSnapshot[]> {
    this.#assertUsable();
    assertId('A conversation id', conversationId);
    await this.ready;
    const listed = await listTurns(this.#http, conversationId, {
      policy: this.#followerDeps.retry,
      clock: { random: this.#followerDeps.random, now: this.#http.now },
      onRetry: (attempt, delayMs, cause) => this.#emit({ type: 'retry', at: Date.now(), scope: 'replay', id: conversationId, attempt, delayMs, cause }),
      sleep: (ms) => this.#sleep(ms),
    });
    const work: Promise<void>[] = [];
    for (const turn of listed) work.push(this.#adopt(turn));
    await Promise.all(work);
    return listed.flatMap((turn) => {
      const follower = this.#followers.get(turn.id);
      return follower === undefined ? [] : [follower.getSnapshot()];
    });
  }

  async clearStorage(): Promise<void> {
    this.#assertUsable();
    for (const follower of this.#followers.values()) follower.dispose();
    this.#followers.clear();
    this.#restored.clear();
    this.#turnBatcher.request();
    await this.#outbox.clear();
    await this.#persistence.clear();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const follower of this.#followers.values()) follower.dispose();
    this.#submissions.dispose();
    this.#outbox.dispose();
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    this.#turnBatcher.cancel();
    void this.#persistence.dispose();
  }

  // ------------------------------------------------------------------ outbox seam

  /**
   * Seam for the outbox (`createOutbox(deps)`): pass this as `deps.onAccepted`. Follows
   * the accepted turn, records which submission and conversation it belongs to (written
   * to storage at once, so a reload before its first event still resumes it), and
   * returns the turn handle for `Submission.accepted`.
   */
  followAccepted(entry: Pick<OutboxEntry, 'operationId' | 'conversationId'> & Partial<Pick<OutboxEntry, 'content'>>, answer: SubmitAnswer): Turn {
    // The turn's row keeps the message: the outbox deletes the entry soon after acceptance.
    if (entry.content !== undefined) this.#persistence.setMessage(answer.turnId, { content: entry.content, operationId: entry.operationId });
    const turn = this.turn(answer.turnId) as TurnFollower;
    turn.setOrigin({ conversationId: entry.conversationId, messageId: answer.messageId, operationId: entry.operationId });
    return turn;
  }

  /** Seam for the outbox: `deps.storage`, routed to the current (possibly degraded) store. */
  get outboxStorage(): OutboxStorage {
    return this.#persistence.outbox;
  }

  // ------------------------------------------------------------------ internals

  async #start(): Promise<void> {
    await this.#persistence.open();
    if (this.#options.persist === true) await this.#askPersistence();
    const loaded = await this.#persistence.loadUnfinished();
    // Entries earlier pages left: listed now, sent (by the one sending tab) from here on.
    await this.#outbox.start();
    const conversations = new Set<string>();
    for (const turn of loaded) {
      if (this.#followers.has(turn.record.id)) continue;
      const follower = this.#createFollower(turn.record.id);
      follower.restore(turn);
      this.#restored.add(turn.record.id);
      conversations.add(turn.record.conversationId);
    }
    void this.#persistence.sweep();
    // Stored text is visible now; the network starts after `ready`.
    queueMicrotask(() => {
      if (this.#disposed) return;
      for (const id of this.#restored) this.#followers.get(id)?.start();
      for (const conversationId of conversations) {
        this.recover(conversationId).catch((error: unknown) => {
          if (!this.#disposed) this.#emit({ type: 'failed', at: Date.now(), scope: 'replay', id: conversationId, error: asLifelineError(error) });
        });
      }
    });
  }

  async #boot(follower: TurnFollower): Promise<void> {
    await this.ready;
    if (this.#disposed || this.#followers.get(follower.id) !== follower) return;
    if (!this.#restored.has(follower.id)) {
      const stored = await this.#persistence.loadTurn(follower.id);
      if (stored !== undefined && follower.lastSeq === 0 && !follower.done) follower.restore(stored);
    }
    follower.start();
  }

  /**
   * Shows a conversation's stored turns from storage, without the network: ended turns
   * are not restored at start, yet the conversation lists them (and the messages that
   * started them) after a reload.
   */
  async #hydrate(conversationId: string): Promise<void> {
    await this.ready;
    if (this.#disposed) return;
    const records = await this.#persistence.loadConversation(conversationId);
    for (const record of records) {
      if (this.#disposed || this.#followers.has(record.id)) continue;
      const follower = this.#createFollower(record.id);
      if (record.text !== undefined) {
        // Folded: the row is the whole turn, nothing more to read.
        follower.restore({ record, events: [] });
        this.#restored.add(record.id);
      }
      void this.#boot(follower);
    }
  }

  /** One listed turn: adopt it when not held, revive it when it failed, else replay alongside. */
  async #adopt(turn: TurnObject): Promise<void> {
    const held = this.#followers.get(turn.id);
    if (held === undefined) {
      const follower = this.#createFollower(turn.id);
      follower.setOrigin({ conversationId: turn.conversationId, messageId: turn.messageId });
      const stored = await this.#persistence.loadTurn(turn.id);
      if (stored !== undefined) follower.restore(stored);
      await follower.start(true);
      return;
    }
    if (held.done) {
      if (held.revivable) await held.revive();
      return;
    }
    await held.replayAlongside();
  }

  /** Waits `ms` between retries; rejects `disposed` as soon as the client is. */
  #sleep(ms: number): Promise<void> {
    this.#assertUsable();
    return new Promise((resolve, reject) => {
      const cancel = (): void => {
        clearTimeout(timer);
        reject(new CancelledError('disposed', 'This Lifeline client was disposed.'));
      };
      const timer = setTimeout(() => {
        const index = this.#cleanups.indexOf(cancel);
        if (index >= 0) this.#cleanups.splice(index, 1);
        resolve();
      }, ms);
      this.#cleanups.push(cancel);
    });
  }

  #createFollower(turnId: string): TurnFollower {
    const follower = new TurnFollower(turnId, this.#followerDeps);
    this.#followers.set(turnId, follower);
    this.#turnBatcher.request();
    return follower;
  }

  #sortedFollowers(): TurnFollower[] {
    return [...this.#followers.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  #emit(diagnostic: Diagnostic): void {
    this.#diagnostics.emit(diagnostic);
    const listener = this.#options.onDiagnostic;
    if (listener === undefined) return;
    try {
      listener(diagnostic);
    } catch (error) {
      reportListenerError(error);
    }
  }

  /** Browser signals: online/offline for every follower; flush storage when the page goes away. */
  #listen(): void {
    this.#cleanups.push(
      this.#network.subscribe((online) => {
        this.#emit({ type: 'network', at: Date.now(), online });
        for (const follower of this.#followers.values()) follower.onNetwork(online);
      }),
    );
    const scope = globalThis as {
      addEventListener?: (type: string, listener: () => void) => void;
      removeEventListener?: (type: string, listener: () => void) => void;
      document?: { visibilityState?: string; addEventListener?: (type: string, listener: () => void) => void; removeEventListener?: (type: string, listener: () => void) => void };
    };
    const flush = (): void => void this.#persistence.flush();
    if (typeof scope.addEventListener === 'function' && typeof scope.removeEventListener === 'function') {
      scope.addEventListener('pagehide', flush);
      this.#cleanups.push(() => scope.removeEventListener?.('pagehide', flush));
    }
    const documentRef = scope.document;
    if (typeof documentRef?.addEventListener === 'function') {
      const onVisibility = (): void => {
        if (documentRef.visibilityState === 'hidden') flush();
      };
      documentRef.addEventListener('visibilitychange', onVisibility);
      this.#cleanups.push(() => documentRef.removeEventListener?.('visibilitychange', onVisibility));
    }
  }

  async #askPersistence(): Promise<void> {
    const storage = (globalThis as { navigator?: { storage?: { persist?: () => Promise<boolean> } } }).navigator?.storage;
    if (typeof storage?.persist !== 'function') return;
    try {
      this.#persistence.setPersisted(await storage.persist());
    } catch {
      this.#persistence.setPersisted(false);
    }
  }

  #assertUsable(): void {
    if (this.#disposed) throw new CancelledError('disposed', 'This Lifeline client was disposed.');
  }
}

/** What a conversation needs from the outbox (issue 6). */
interface ConversationOutbox {
  /** This conversation's pending and failed entries. */
  outbox: Outbox;
  /** This conversation's entries, accepted ones included (they link a message to its turn). */
  entries: ExternalStore<readonly OutboxEntry[]>;
  send(content: MessageContent): Submission;
  /** The user message stored with a turn's row: after a reload the outbox has forgotten it. */
  stored(turnId: string): TurnMessage | undefined;
}

/** One conversation's interleaved items: each user message before the turn it started, pending ones last. */
class ConversationView implements Conversation {
  readonly id: string;
  readonly outbox: Outbox;
  readonly #turns: () => readonly TurnSnapshot[];
  readonly #subscribeTurns: (listener: () => void) => () => void;
  readonly #submissions: ConversationOutbox;
  /** User messages by turn id, remembered for the session: the outbox forgets accepted entries soon after. */
  readonly #sent = new Map<string, { operationId: string; content: MessageContent }>();
  #snapshot: ConversationSnapshot | undefined;
  #source: readonly TurnSnapshot[] | undefined;
  #sourceEntries: readonly OutboxEntry[] | undefined;

  constructor(id: string, turns: () => readonly TurnSnapshot[], subscribeTurns: (listener: () => void) => () => void, submissions: ConversationOutbox) {
    this.id = id;
    this.#turns = turns;
    this.#subscribeTurns = subscribeTurns;
    this.#submissions = submissions;
    this.outbox = submissions.outbox;
  }

  readonly getSnapshot = (): ConversationSnapshot => {
    const turns = this.#turns();
    const entries = this.#submissions.entries.getSnapshot();
    if (this.#snapshot !== undefined && this.#source === turns && this.#sourceEntries === entries) return this.#snapshot;
    const byTurn = new Map<string, OutboxEntry>();
    for (const entry of entries) {
      if (entry.turnId === undefined) continue;
      byTurn.set(entry.turnId, entry);
      this.#sent.set(entry.turnId, { operationId: entry.operationId, content: entry.content });
    }
    const items: ConversationItem[] = [];
    const placed = new Set<string>();
    for (const turn of turns) {
      if (turn.conversationId !== this.id) continue;
      const user = this.#sent.get(turn.id) ?? this.#submissions.stored(turn.id);
      if (user !== undefined) {
        const entry = byTurn.get(turn.id);
        // A row without the operation id still gets a key of its own (':' is in no id).
        const key = user.operationId ?? `${turn.id}:user`;
        items.push({ role: 'user', key, content: user.content, ...(entry === undefined ? {} : { submission: entry }) });
        placed.add(key);
      }
      items.push({ role: 'assistant', key: turn.id, turn });
    }
    for (const entry of entries) {
      if (!placed.has(entry.operationId)) items.push({ role: 'user', key: entry.operationId, content: entry.content, submission: entry });
    }
    const previous = this.#snapshot;
    this.#source = turns;
    this.#sourceEntries = entries;
    // Same items, same snapshot: a change to another conversation's turn is not ours.
    if (previous !== undefined && sameItems(previous.items, items)) return previous;
    this.#snapshot = Object.freeze({ id: this.id, items: Object.freeze(items) });
    return this.#snapshot;
  };

  readonly subscribe = (listener: () => void): (() => void) => {
    const turns = this.#subscribeTurns(listener);
    const entries = this.#submissions.entries.subscribe(listener);
    return () => {
      turns();
      entries();
    };
  };

  invalidate(): void {
    this.#source = undefined;
  }

  send(content: MessageContent): Submission {
    return this.#submissions.send(content);
  }

  resend(turnId: string): Submission {
    const message = this.#sent.get(turnId) ?? this.#submissions.stored(turnId);
    if (message === undefined) throw new LifelineError('invalid_argument', `No stored message started turn ${turnId}.`);
    return this.send(message.content);
  }
}

function sameItems(a: readonly ConversationItem[], b: readonly ConversationItem[]): boolean {
  return (
    a.length === b.length &&
    a.every((item, index) => item.key === b[index]?.key && item.turn === b[index]?.turn && item.submission === b[index]?.submission)
  );
}
