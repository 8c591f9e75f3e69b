/**
 * `createLifeline()`: wires the pure core, the transport and storage into the client
 * the app holds. Importing this module touches no browser global; everything
 * platform-specific is looked up when a client is created or used.
 */
import { resolveRetryPolicy } from './core/backoff.js';
import { createBatcher, createEmitter, reportListenerError } from './core/subscribable.js';
import { asLifelineError, CancelledError, LifelineError } from './errors.js';
import { assertId, type MessageContent, type SubmitAnswer, type TurnObject } from './protocol/schemas.js';
import { createIndexedDbStore } from './storage/indexeddb-store.js';
import { createMemoryStore } from './storage/memory-store.js';
import { createPersistence, type OutboxStorage } from './storage/persistence.js';
import { createOutbox } from './outbox/outbox.js';
import { createOutboxView, createSubmissionTracker, filteredStore, isUnaccepted, type SubmissionTracker } from './outbox/views.js';
import { headersResolver } from './transport/http.js';
import { createBrowserNetworkMonitor } from './transport/network.js';
import { listTurns } from './transport/requests.js';
import { follow, type FollowerDeps, type TurnFollower } from './turn-follower.js';
import type { Conversation, ConversationItem, ConversationSnapshot, Diagnostic, LifelineClient, LifelineOptions, OutboxEntry, Turn, TurnSnapshot } from './types.js';

/** Notifications waiting for the next animation frame. */
const framed: (() => void)[] = [];
const runFramed = (): void => framed.splice(0).forEach((callback) => callback());

/**
 * Notifies at most once per animation frame while the page is visible, else once per
 * microtask. A hidden page gets no frames: hiding it delivers what waits for one at once
 * (see the `visibilitychange` listener), so subscribers of a background tab still hear.
 */
function notificationScheduler(callback: () => void): void {
  if (globalThis.document?.visibilityState === 'visible' && 'requestAnimationFrame' in globalThis) {
    if (!framed.length) requestAnimationFrame(runFramed);
    framed.push(callback);
  } else queueMicrotask(callback);
}

/** What `createLifeline` returns: the public client plus the seams the outbox (and its tests) use. */
interface Client extends LifelineClient {
  /**
   * The outbox's `onAccepted`: follows the accepted turn, records which submission and
   * conversation it belongs to (written to storage at once, so a reload before its first
   * event still resumes it), and returns the turn handle for `Submission.accepted`.
   */
  followAccepted(entry: Pick<OutboxEntry, 'operationId' | 'conversationId'> & Partial<Pick<OutboxEntry, 'content'>>, answer: SubmitAnswer): Turn;
  /** The outbox's `storage`, routed to the current (possibly degraded) store. */
  readonly outboxStorage: OutboxStorage;
}

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
  if (typeof options?.baseUrl !== 'string') throw new LifelineError('invalid_argument', 'baseUrl must be a string.');
  const { baseUrl, storage = 'indexeddb', namespace = 'default', limits = {}, stall = {} } = options;
  // Every numeric option of these three levels (retry has its own rules): > 0, or 0 for flushMs.
  for (const level of [options, stall, limits]) {
    for (const [key, value] of Object.entries(level)) {
      if (typeof value === 'number' && !(value > 0 || (key === 'flushMs' && value === 0))) throw new LifelineError('invalid_argument', `Invalid ${key}.`);
    }
  }
  const now = Date.now;
  const fetch: typeof globalThis.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const headers = headersResolver(options.headers);
  const diagnostics = createEmitter<Diagnostic>();
  const emit = (diagnostic: Diagnostic): void => {
    diagnostics.emit(diagnostic);
    try {
      options.onDiagnostic?.(diagnostic);
    } catch (error) {
      reportListenerError(error);
    }
  };
  const network = createBrowserNetworkMonitor();
  const followers = new Map<string, TurnFollower>();
  const conversations = new Map<string, Conversation>();
  /** Aborted on dispose (its reason is the `disposed` error): removes the page listeners and cancels sleeps. */
  const life = new AbortController();
  const signal = life.signal;
  const assertUsable = (): void => signal.throwIfAborted();

  let turnList: readonly TurnSnapshot[] | undefined;
  const turnListeners = createEmitter<void>();
  const turnBatcher = createBatcher(() => {
    turnList = undefined;
    turnListeners.emit();
  }, notificationScheduler);

  // A refused or missing IndexedDB degrades to memory, once, visibly.
  const store = storage === 'memory' ? createMemoryStore() : storage === 'indexeddb' ? createIndexedDbStore({ namespace }) : storage;
  const persistence = createPersistence({
    store,
    flushMs: options.flushMs ?? 16,
    flushEvents: options.flushEvents ?? 256,
    retentionMs: options.retentionMs ?? 7 * 24 * 3600_000,
    now,
    emit,
  });
  const deps: FollowerDeps = {
    baseUrl,
    namespace,
    fetch,
    headers,
    retry: resolveRetryPolicy(options.retry),
    stall,
    limits,
    now,
    random: Math.random,
    network,
    emit,
    persistence,
    schedule: notificationScheduler,
    onChange: () => turnBatcher.request(),
  };

  // Durable submissions behind conversation.send (issue 6).
  const outbox = createOutbox({
    storage: persistence.outbox,
    baseUrl,
    fetch,
    headers,
    ...(options.retry && { retry: options.retry }),
    ...options.outbox,
    namespace,
    network,
    // Online/offline is reported once, below.
    emit: (diagnostic) => diagnostic.type === 'network' || emit(diagnostic),
    onAccepted: (entry, answer) => {
      if (!signal.aborted) submissions.accept(entry.operationId, client.followAccepted(entry, answer));
    },
  });
  const submissions: SubmissionTracker = createSubmissionTracker(outbox);

  const createFollower = (turnId: string): TurnFollower => {
    const follower = follow(turnId, deps);
    followers.set(turnId, follower);
    turnBatcher.request();
    return follower;
  };

  /** Starts a follower once stored turns are loaded, from what storage holds of it. */
  const boot = async (follower: TurnFollower): Promise<void> => {
    await client.ready;
    if (signal.aborted || followers.get(follower.id) !== follower) return;
    // Storage is read only for a follower holding nothing yet (not restored, no events arrived meanwhile).
    const empty = (): boolean => follower.lastSeq === 0 && !follower.done;
    const stored = empty() ? await persistence.loadTurn(follower.id) : undefined;
    if (stored && empty()) follower.restore(stored);
    void follower.start();
  };

  /** One listed turn: adopt it when not held, revive it when it failed, else replay alongside. */
  const adopt = async (turn: TurnObject): Promise<void> => {
    const held = followers.get(turn.id);
    if (held?.done) return held.revive();
    if (held) return held.replayAlongside();
    const follower = createFollower(turn.id);
    // A 1.1 server says which message started the turn: the conversation shows it too.
    if (turn.content !== undefined && !persistence.message(turn.id)) persistence.setMessage(turn.id, { content: turn.content });
    follower.setOrigin({ conversationId: turn.conversationId, messageId: turn.messageId });
    const stored = await persistence.loadTurn(turn.id);
    if (stored) follower.restore(stored);
    await follower.start(true);
  };

  /**
   * Shows a conversation's stored turns without the network: ended turns are not restored
   * at start, yet the conversation lists them (and their messages) after a reload.
   */
  const hydrate = async (conversationId: string): Promise<void> => {
    await client.ready;
    for (const record of signal.aborted ? [] : await persistence.loadConversation(conversationId)) {
      if (signal.aborted || followers.has(record.id)) continue;
      const follower = createFollower(record.id);
      // Folded: the row is the whole turn, nothing more to read.
      if (record.text !== undefined) follower.restore({ record, events: [] });
      void boot(follower);
    }
  };

  const start = async (): Promise<void> => {
    const loaded = await persistence.open(options.persist);
    // Entries earlier pages left: listed now, sent (by the one sending tab) from here on.
    await outbox.start();
    const restored = loaded.filter(({ record }) => !followers.has(record.id));
    for (const turn of restored) createFollower(turn.record.id).restore(turn);
    // Stored text is visible now; the network starts after `ready`.
    queueMicrotask(() => {
      if (signal.aborted) return;
      for (const { record } of restored) void followers.get(record.id)?.start();
      for (const id of new Set(restored.map(({ record }) => record.conversationId))) {
        client.recover(id).catch((error: unknown) => {
          if (!signal.aborted) emit({ type: 'failed', at: now(), scope: 'replay', id, error: asLifelineError(error) });
        });
      }
    });
  };

  /** One conversation's interleaved items: each user message before the turn it started, pending ones last. */
  const conversationView = (id: string, ready: Promise<void>): Conversation => {
    // This conversation's entries, accepted ones included (they link a message to its turn).
    const entries = filteredStore(outbox.entries, (entry) => entry.conversationId === id);
    const send = (content: MessageContent) => {
      assertUsable();
      return submissions.track(outbox.enqueue(id, content).operationId);
    };
    let snapshot: ConversationSnapshot = Object.freeze({ id, items: Object.freeze([]) });
    let sources: unknown[] = [];
    return {
      id,
      ready,
      outbox: createOutboxView(outbox, (entry) => entry.conversationId === id && isUnaccepted(entry)),
      send,
      resend(turnId) {
        // The message is stored with its turn's row: the outbox forgets accepted entries.
        const message = persistence.message(turnId);
        if (!message) throw new LifelineError('invalid_argument', 'No stored message started this turn.');
        return send(message.content);
      },
      getSnapshot() {
        const turns = client.turns.getSnapshot();
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
      subscribe(listener) {
        const stops = [turnListeners.subscribe(listener), entries.subscribe(listener)];
        return () => stops.forEach((stop) => stop());
      },
    };
  };

  const client: Client = {
    diagnostics: { subscribe: diagnostics.subscribe },
    storageStatus: persistence.status,
    turns: {
      getSnapshot: () =>
        (turnList ??= Object.freeze(
          [...followers.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((follower) => follower.getSnapshot()),
        )),
      subscribe: turnListeners.subscribe,
    },
    outbox: createOutboxView(outbox, isUnaccepted),
    // Runs until its first await only: `client` exists before anything reads it.
    ready: start(),

    turn(turnId) {
      assertUsable();
      assertId('turnId', turnId);
      let follower = followers.get(turnId);
      if (follower) follower.reopen();
      else void boot((follower = createFollower(turnId)));
      return follower;
    },

    conversation(conversationId) {
      assertUsable();
      assertId('conversationId', conversationId);
      let view = conversations.get(conversationId);
      if (!view) {
        conversations.set(conversationId, (view = conversationView(conversationId, hydrate(conversationId))));
      }
      return view;
    },

    async recover(conversationId) {
      assertUsable();
      assertId('conversationId', conversationId);
      await client.ready;
      // Rejects `disposed` as soon as the client is.
      const listed = await listTurns(deps, conversationId, signal);
      await Promise.all(listed.map(adopt));
      return listed.flatMap((turn) => followers.get(turn.id)?.getSnapshot() ?? []);
    },

    async clearStorage() {
      assertUsable();
      for (const follower of followers.values()) follower.dispose();
      followers.clear();
      turnBatcher.request();
      await outbox.clear();
      await persistence.clear();
    },

    dispose() {
      if (signal.aborted) return;
      life.abort(new CancelledError('disposed', 'The client was disposed.'));
      for (const follower of followers.values()) follower.dispose();
      submissions.dispose();
      outbox.dispose();
      turnBatcher.cancel();
      void persistence.dispose();
    },

    followAccepted(entry, answer) {
      // The turn's row keeps the message: the outbox deletes the entry soon after acceptance.
      if (entry.content !== undefined) persistence.setMessage(answer.turnId, { content: entry.content, operationId: entry.operationId });
      const turn = client.turn(answer.turnId) as TurnFollower;
      turn.setOrigin({ conversationId: entry.conversationId, messageId: answer.messageId, operationId: entry.operationId });
      return turn;
    },

    outboxStorage: persistence.outbox,
  };

  // Browser signals: online/offline for every follower; flush storage when the page goes away.
  const flush = (): void => {
    runFramed();
    void persistence.flush();
  };
  signal.addEventListener(
    'abort',
    network.subscribe((online) => {
      emit({ type: 'network', at: now(), online });
      for (const follower of followers.values()) follower.onNetwork(online);
    }),
  );
  // Flushing on any visibility change is harmless; the one that matters is to `hidden`.
  globalThis.addEventListener?.('pagehide', flush, { signal });
  globalThis.document?.addEventListener('visibilitychange', flush, { signal });
  globalThis.document?.addEventListener('resume', () => followers.forEach((follower) => follower.onResume()), { signal });
  return client;
}
