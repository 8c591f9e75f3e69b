/**
 * `createLifeline()`: wires the pure core, the transport and storage into the client
 * the app holds. Importing this module touches no browser global; everything
 * platform-specific is looked up when a client is created or used. Its parts live in
 * client/: the followed turns (followers.ts), conversation views, page signals and
 * notification frames.
 */
import { resolveRetryPolicy } from './core/backoff.js';
import { isEnded } from './core/domain.js';
import { createEmitter } from './core/subscribable.js';
import { asLifelineError, CancelledError, LifelineError } from './errors.js';
import { assertId, type SubmitAnswer } from './protocol/schemas.js';
import { createMemoryStore } from './storage/memory-store.js';
import { createPersistence, type OutboxStorage, type Persistence } from './storage/persistence.js';
import { createOutbox, type OutboxController, type OutboxDeps } from './outbox/outbox.js';
import { createOutboxView, createSubmissionTracker, isUnaccepted } from './outbox/views.js';
import { createReceiptQueue, type ReceiptQueue } from './outbox/receipts.js';
import { headersResolver } from './transport/http.js';
import { resolvePorts, type Ports } from './ports/index.js';
import { realStorage } from './ports/storage.js';
import { platformIndexedDb } from './ports/indexeddb.js';
import { listTurns } from './transport/requests.js';
import type { FollowerDeps, TurnFollower } from './follow/types.js';
import type { Conversation, Diagnostic, DrillKind, LifelineClient, LifelineOptions, OutboxEntry, Subscribable, Turn, TurnSnapshot } from './types.js';
import { abortable } from './runtime/abortable.js';
import { createConversationView } from './client/conversation-view.js';
import { createFollowerRegistry, type FollowerRegistry } from './client/followers.js';
import { createFrames, type Frames } from './client/frames.js';
import { listenToPage } from './client/page-signals.js';

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

/** Throws `invalid_argument` for unusable options: every number of these three levels (retry has its own rules) > 0, or 0 for flushMs. */
function assertOptions(options: LifelineOptions): void {
  if (typeof options?.baseUrl !== 'string') throw new LifelineError('invalid_argument', 'baseUrl must be a string.');
  for (const level of [options, options.stall ?? {}, options.limits ?? {}]) {
    for (const [key, value] of Object.entries(level)) {
      if (typeof value === 'number' && !(value > 0 || (key === 'flushMs' && value === 0))) throw new LifelineError('invalid_argument', `Invalid ${key}.`);
    }
  }
}

/**
 * True while a page is rendered on a server (React's SSR, Next.js prerendering): the default
 * IndexedDB storage with the real ports, no document and no IndexedDB. That client is thrown
 * away with the request and the browser creates its own, so it opens no storage, and a
 * missing IndexedDB is no failure to report.
 */
function isServerRendering(options: LifelineOptions, ports: Ports): boolean {
  return (options.storage ?? 'indexeddb') === 'indexeddb' && ports.storage === realStorage && !ports.page.isBrowser() && platformIndexedDb() === undefined;
}

/** The persistence layer over the chosen store (a refused or missing IndexedDB degrades to memory, once, visibly). */
function openPersistence({ storage = 'indexeddb', namespace = 'default', ...options }: LifelineOptions, ports: Ports, emit: (diagnostic: Diagnostic) => void, rendering: boolean): Persistence {
  const store = storage === 'memory' || rendering ? createMemoryStore() : storage === 'indexeddb' ? ports.storage.openStore(namespace) : storage;
  const [flushMs, flushEvents, retentionMs] = [options.flushMs ?? 16, options.flushEvents ?? 256, options.retentionMs ?? 7 * 24 * 3600_000];
  return createPersistence({ store, flushMs, flushEvents, retentionMs, now: ports.clock.wallNow, emit, timers: ports.timers, persist: ports.storage.persist });
}

/** Everything followers (and `recover()`'s list) need, bar their change notice, from the options. */
function followerDeps(options: LifelineOptions, ports: Ports, frames: Frames, emit: (diagnostic: Diagnostic) => void, persistence: Persistence, signal: AbortSignal): Omit<FollowerDeps, 'onChange'> {
  const { baseUrl, namespace = 'default', stall = {}, limits = {} } = options;
  const { clock, timers, random, network, tabs, page } = ports;
  const fetch = options.fetch ?? ports.http.fetch;
  const retry = resolveRetryPolicy(options.retry);
  const requestTimeoutMs = stall.firstEventMs ?? 15_000;
  return { baseUrl, namespace, fetch, requestTimeoutMs, signal, headers: headersResolver(options.headers), retry, stall, limits, clock, timers, random: random.next, newId: random.id, tabs, page, network, emit, persistence, schedule: frames.schedule };
}

/** The durable outbox behind `conversation.send`, on the client's plumbing and storage. */
function openOutbox(options: LifelineOptions, ports: Ports, deps: Omit<FollowerDeps, 'onChange'>, onAccepted: OutboxDeps['onAccepted']): OutboxController {
  const { tabs, storage } = ports;
  return createOutbox({
    ...deps,
    ...options.outbox,
    storage: deps.persistence.outbox,
    locks: tabs.locks(),
    channel: (name) => tabs.channel(name),
    journal: storage.pageStorage() ?? null,
    onAccepted,
  });
}

/**
 * Delivery receipts (docs/protocol.md section 10): every turn this client followed to a
 * verified end (the `completed` diagnostic) gets one; a `409` rebuilds the turn.
 */
function openReceipts(
  deps: Omit<FollowerDeps, 'onChange'>,
  registry: FollowerRegistry,
  diagnostics: Subscribable<Diagnostic>,
  options: LifelineOptions,
): ReceiptQueue & { resend(turnId: string): void } {
  const queue = createReceiptQueue({ ...deps, ...options.receipts, onMismatch: (turnId) => registry.followers.get(turnId)?.rebuild() });
  const receiptOf = (turnId: string): void => {
    const snapshot = registry.followers.get(turnId)?.getSnapshot();
    // Ended by its turn.end and proven (a client-side failure sets `error`: nothing to vouch for).
    if (!snapshot || snapshot.error !== undefined || !isEnded(snapshot.status) || snapshot.lastSeq === 0) return;
    queue.add(turnId, snapshot.lastSeq, snapshot.text);
  };
  if (options.receipts?.enabled !== false) {
    // Said once the end is applied and its text proven (follow-steps.ts `verified`); the snapshot is final a moment later.
    diagnostics.subscribe((diagnostic) => {
      if (diagnostic.type === 'completed') queueMicrotask(() => receiptOf(diagnostic.turnId));
    });
  }
  return { ...queue, resend: (turnId) => (options.receipts?.enabled === false ? undefined : receiptOf(turnId)) };
}

/** How `start` treats storage: open it (asking for persistence or not), or, rendered on a server, leave it closed (its status stays `opening`). */
type StorageStart = { kind: 'open'; persist: boolean } | { kind: 'server' };

const DRILLS: readonly string[] = ['cut', 'stall', 'replay'];

/**
 * Loads what storage holds, then (after `ready`) starts the network: restored turns are
 * followed and their conversations recovered from the server's list.
 */
async function start(recover: (conversationId: string) => Promise<unknown>, { persistence, emit, clock }: Omit<FollowerDeps, 'onChange'>, outbox: OutboxController, receipts: ReceiptQueue, registry: FollowerRegistry, storage: StorageStart, signal: AbortSignal): Promise<void> {
  const loaded = storage.kind === 'server' ? [] : await persistence.open(storage.persist);
  // Entries earlier pages left: listed now, sent (by the one sending tab) from here on.
  await outbox.start();
  // Receipts earlier pages could not land (offline, server down).
  receipts.start();
  const restored = registry.restore(loaded);
  // Stored text is visible now; the network starts after `ready`.
  queueMicrotask(() => {
    if (signal.aborted) return;
    for (const { record } of restored) void registry.followers.get(record.id)?.start();
    for (const id of new Set(restored.map(({ record }) => record.conversationId))) {
      recover(id).catch((error: unknown) => {
        if (!signal.aborted) emit({ type: 'failed', at: clock.wallNow(), scope: 'replay', id, error: asLifelineError(error) });
      });
    }
  });
}

/** `recover()`: the conversation's turns from the server's list, each adopted, newest first. */
async function recoverListed(deps: Omit<FollowerDeps, 'onChange'>, registry: FollowerRegistry, receipts: ReturnType<typeof openReceipts>, ready: Promise<void>, conversationId: string): Promise<TurnSnapshot[]> {
  await ready;
  const listed = await listTurns(deps, conversationId, deps.signal);
  await Promise.all(listed.map(registry.adopt));
  // A turn this client holds whole that the server still has as undelivered (its receipt was lost with a cleared storage).
  for (const turn of listed) if (turn.delivery?.state === 'pending') receipts.resend(turn.id);
  return listed.flatMap((turn) => registry.followers.get(turn.id)?.getSnapshot() ?? []);
}

/** `client.drill`: said before it runs (timelines read in order), whether it fits the turn's state or not. */
function runDrill(follower: TurnFollower | undefined, drill: DrillKind, say: (applied: boolean) => void): boolean {
  if (!DRILLS.includes(drill)) throw new LifelineError('invalid_argument', 'Unknown drill.');
  const run = follower?.drill(drill);
  say(run !== undefined);
  run?.();
  return run !== undefined;
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
  assertOptions(options);
  // The diagnostics channel; the app's `onDiagnostic` is one more listener (a throw is reported, like any listener's).
  const diagnostics = createEmitter<Diagnostic>();
  if (options.onDiagnostic) diagnostics.subscribe(options.onDiagnostic);
  const ports = resolvePorts(options.ports);
  const frames = createFrames(ports.page);
  const rendering = isServerRendering(options, ports);
  const persistence = openPersistence(options, ports, diagnostics.emit, rendering);
  /** Aborted on dispose (its reason is the `disposed` error): removes the page listeners, cancels sleeps and requests, settles every promise. */
  const life = new AbortController();
  const signal = life.signal;
  const deps = followerDeps(options, ports, frames, diagnostics.emit, persistence, signal);
  const assertUsable = (): void => signal.throwIfAborted();
  const registry = createFollowerRegistry(deps, () => client.ready, signal);
  const { followers, turns } = registry;
  const outbox = openOutbox(options, ports, deps, (entry, answer) => {
    if (!signal.aborted) submissions.accept(entry.operationId, client.followAccepted(entry, answer));
  });
  const submissions = createSubmissionTracker(outbox, (turnId) => client.turn(turnId));
  const conversations = new Map<string, Conversation>();
  const receipts = openReceipts(deps, registry, diagnostics, options);

  const client: Client = {
    diagnostics: { subscribe: diagnostics.subscribe },
    storageStatus: persistence.status,
    turns,
    outbox: createOutboxView(outbox, isUnaccepted),
    // Runs until its first await only: `client` exists before anything reads it. Resolves at once on dispose.
    ready: abortable(start((id) => client.recover(id), deps, outbox, receipts, registry, rendering ? { kind: 'server' } : { kind: 'open', persist: options.persist === true }, signal), signal).catch(() => undefined),
    turn(turnId) {
      assertUsable();
      assertId('turnId', turnId);
      return registry.turn(turnId);
    },
    conversation(conversationId) {
      assertUsable();
      assertId('conversationId', conversationId);
      let view = conversations.get(conversationId);
      if (!view) conversations.set(conversationId, (view = createConversationView(conversationId, registry.hydrate(conversationId), { outbox, submissions, persistence, turns, assertUsable })));
      return view;
    },
    async recover(conversationId) {
      assertUsable();
      assertId('conversationId', conversationId);
      // Rejects `disposed` as soon as the client is, whatever it waits on.
      return abortable(recoverListed(deps, registry, receipts, client.ready, conversationId), signal);
    },
    drill(turnId, drill) {
      assertUsable();
      assertId('turnId', turnId);
      return runDrill(followers.get(turnId), drill, (applied) => diagnostics.emit({ type: 'drill', at: ports.clock.wallNow(), turnId, drill, applied }));
    },
    async clearStorage() {
      assertUsable();
      registry.clear();
      receipts.clear();
      await abortable(
        outbox.clear().then(() => persistence.clear()),
        signal,
      );
    },
    dispose() {
      if (signal.aborted) return;
      life.abort(new CancelledError('disposed', 'The client was disposed.'));
      for (const part of [registry, submissions, outbox, receipts]) part.dispose();
      void persistence.dispose();
    },
    followAccepted(entry, answer) {
      // The turn's row keeps the message: the outbox deletes the entry soon after acceptance.
      if (entry.content !== undefined) persistence.setMessage(answer.turnId, { content: entry.content, operationId: entry.operationId });
      const turn = client.turn(answer.turnId);
      registry.followers.get(answer.turnId)?.setOrigin({ conversationId: entry.conversationId, messageId: answer.messageId, operationId: entry.operationId });
      return turn;
    },
    outboxStorage: persistence.outbox,
  };
  listenToPage(signal, { ...deps, frames, followers });
  return client;
}
