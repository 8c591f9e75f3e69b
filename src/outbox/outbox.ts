/**
 * The durable outbox: every submission is written to storage before it is posted, is
 * retried with the same Idempotency-Key until the server has it (or it fails visibly),
 * survives reloads and is sent by exactly one tab. Its parts, one concept a file:
 *
 * - entry-state.ts: an entry's states and which entries are due (pure);
 * - ledger.ts: the entries as this tab knows them, in step with storage and other tabs;
 * - journal.ts: the synchronous `localStorage` copy that closes the reload window;
 * - sender.ts + attempt.ts + submit.ts: the one sending tab's loop, one attempt, one POST;
 * - tabs/leadership.ts: which tab sends.
 *
 * This file wires them and is the API the client drives. `retry(id)` of a failed entry
 * re-arms it as if just created (createdAt = now, attempts = 0): `maxAgeMs` counts from
 * there. Its operation id and position are kept.
 */
import { createEmitter } from '../core/subscribable.js';
import { asStorageError, LifelineError, TransportError, StorageError } from '../errors.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { IDEMPOTENCY_KEY_PATTERN, type MessageContent } from '../protocol/schemas.js';
import type { Diagnostic } from '../types.js';
import { isPending, newEntry, rearmed, type CheckedBody } from './entry-state.js';
import { realStorage } from '../ports/storage.js';
import { realTabs } from '../ports/tabs.js';
import { createJournal, type Journal } from './journal.js';
import { createLedger, type Ledger } from './ledger.js';
import { createSchedule } from './schedule.js';
import { createSender, type SenderDeps } from './sender.js';
import { checkedBody } from './submit.js';
import type { Emit, Enqueued, EnqueueOptions, OutboxChannel, OutboxController, OutboxDeps } from './types.js';

export type { Enqueued, EnqueueOptions, OutboxChannel, OutboxController, OutboxDeps, OutboxLocks, OutboxStorage } from './types.js';
export type { NetworkMonitor } from '../ports/network.js';

/** A submission's body as the server fingerprints it (key order aside). */
const bodyText = ({ content, context }: CheckedBody): string => canonicalJson(context ? { content, context } : { content });

/** The channel other tabs' notices arrive on: `new BroadcastChannel(name)` by default, where there is one. */
function openChannel(factory: OutboxDeps['channel'], name: string): OutboxChannel | undefined {
  return factory === undefined ? realTabs.channel(name) : (factory?.(name) ?? undefined);
}

/** How the sending tab leads, posts and retries: the client's plumbing and the outbox's settings with their defaults. */
function sendingOptions(deps: OutboxDeps, trouble: (error: unknown) => void, signal: AbortSignal): Omit<SenderDeps, 'ledger' | 'busy' | 'emit' | 'name' | 'online' | 'headersOf'> {
  const { storage, leaseTtlMs = 1e4, clock, newId, retry } = deps;
  const maxAgeMs = deps.maxAgeMs ?? 864e5;
  return {
    ...deps,
    timeoutMs: deps.timeoutMs ?? 15e3,
    maxAgeMs,
    schedule: createSchedule({ clock, maxAgeMs, maxDelayMs: Math.max(retry.maxDelayMs, retry.maxRetryAfterMs) }),
    leadership: { signal, locks: deps.locks, timers: deps.timers, lease: { store: storage, ttlMs: leaseTtlMs, onError: trouble, clock, newId } },
  };
}

/** What one `enqueue` needs of its outbox. */
interface EnqueueContext {
  ledger: Ledger;
  journal: Journal;
  requestHeaders: Map<string, Record<string, string>>;
  newId: () => string;
  now: () => number;
  /** The reason a saved entry is not durable yet, if it is not (its journal copy then stays). */
  notDurable: () => StorageError | undefined;
}

/** Writes one submission: journaled synchronously, then stored; `written` settles once storage that survives a reload holds it. */
function enqueue(context: EnqueueContext, conversationId: string, content: MessageContent, options: EnqueueOptions): Enqueued {
  const { ledger, journal, requestHeaders } = context;
  const body = checkedBody(conversationId, content, options.context);
  const operationId = options.operationId ?? context.newId();
  if (!IDEMPOTENCY_KEY_PATTERN.test(operationId)) throw new LifelineError('invalid_argument', 'An operation id is 16 to 128 characters of [A-Za-z0-9_-].');
  for (const id of requestHeaders.keys()) if (!ledger.find(id)) requestHeaders.delete(id);
  if (options.headers) requestHeaders.set(operationId, { ...options.headers });
  // The same key again (a double click, another tab): one entry. With another body it is
  // what the server would answer (docs/protocol.md section 1: 422), without a request.
  const found = ledger.find(operationId);
  if (found && bodyText(found) !== bodyText(body)) {
    throw new TransportError('submission_rejected', 'This Idempotency-Key was used with another body.', { status: 422, serverCode: 'idempotency_key_reused' });
  }
  if (found) return { operationId, written: Promise.resolve() };
  const entry = newEntry(operationId, conversationId, body, context.now(), ledger.list());
  // Synchronous: durable before `send()` returns, whatever happens to the page next.
  journal.write(entry);
  // Its first attempt writes `sending` before posting, and writes land in order: never posted before this write.
  const written = ledger.save(entry).then((error) => {
    const failure = error ?? context.notDurable();
    if (failure) throw failure;
    journal.remove(entry.operationId);
  });
  // Callers may ignore `written`; the failure is already a diagnostic.
  written.catch(() => undefined);
  return { operationId: entry.operationId, written };
}

interface RestoreDeps {
  ledger: Ledger;
  journal: Journal;
  emit: Emit;
  trouble: (error: unknown) => StorageError;
  notDurable: () => StorageError | undefined;
  /** When this outbox was created: pending entries older than this were left by earlier pages. */
  born: number;
}

/** The outbox's start: reads storage, then adopts what a page journaled but did not get stored. */
async function restore({ ledger, journal, emit, trouble, notDurable, born }: RestoreDeps): Promise<void> {
  for (const error of await ledger.reload()) emit({ type: 'storage-error', error });
  // An entry storage holds may have moved on since it was journaled: left as stored.
  // A copy stays journaled until storage that survives a reload holds its entry.
  await journal.adopt(async (entry) => {
    // Held already (read back, or sent by this page before it started): its copy goes
    // only once its writes landed in storage that survives a reload, like a new one's.
    const error = ledger.find(entry.operationId) ? await ledger.settled().then(() => undefined) : await ledger.save(entry);
    return error ?? notDurable();
  }, trouble);
  const count = ledger.list().filter((entry) => isPending(entry) && entry.createdAt < born).length;
  if (count) emit({ type: 'outbox-replay', count });
}

/**
 * Creates the durable outbox. Nothing is read or sent until {@link OutboxController.start}
 * or the first {@link OutboxController.enqueue}.
 */
export function createOutbox(deps: OutboxDeps): OutboxController {
  const { storage, clock, network } = deps;
  const now = (): number => clock.wallNow();
  const name = `lifeline-outbox:${deps.namespace}`;
  /** Pending entries older than this outbox were left by earlier pages. */
  const born = now();
  /** Aborted on dispose: stops waiting for the sender role, sending and sleeping. */
  const stop = new AbortController();
  const listeners = createEmitter<void>();
  const busy = new Map<string, AbortController>();
  /** Per-request headers by operation id, for this page's attempts only (see EnqueueOptions.headers). */
  const requestHeaders = new Map<string, Record<string, string>>();
  const journal = createJournal(deps.journal === undefined ? realStorage.pageStorage() : (deps.journal ?? undefined), name);
  const channel = openChannel(deps.channel, name);
  const emit: Emit = (diagnostic) => deps.emit({ ...diagnostic, at: now() } as Diagnostic);
  const trouble = (error: unknown): StorageError => {
    const storageError = asStorageError(error, 'Outbox storage failed.');
    if (!stop.signal.aborted) emit({ type: 'storage-error', error: storageError });
    return storageError;
  };
  /** Storage that fell back to memory keeps nothing over a reload: the journal copy must stay (docs/faults.md row 43). */
  const notDurable = (): StorageError | undefined =>
    storage.durable?.() === false ? new StorageError('storage_not_durable', 'Storage fell back to memory: the entry is kept in the journal only.') : undefined;
  const ledger = createLedger({
    storage,
    journal,
    busy,
    trouble,
    onAccepted: deps.onAccepted,
    acceptedRetentionMs: deps.acceptedRetentionMs ?? 1e4,
    timers: deps.timers,
    notify(notice) {
      try {
        channel?.postMessage(notice);
      } catch {
        // A refused post (a closed channel, DataCloneError) costs the notice only: other tabs re-read storage when they lead.
      }
    },
    changed: () => (listeners.emit(), sender.poke()),
  });
  const sender = createSender({ ...sendingOptions(deps, trouble, stop.signal), ledger, busy, emit, name, online: network?.online() ?? true, headersOf: (id) => requestHeaders.get(id) });
  channel?.addEventListener('message', ({ data }) => (typeof data === 'string' ? ledger.forget(data) : void ledger.reload()));
  const unsubscribe = network?.subscribe(sender.setOnline);
  let started: Promise<void> | undefined;

  return {
    entries: { getSnapshot: ledger.list, subscribe: listeners.subscribe },
    enqueue: (conversationId, content, options = {}) => enqueue({ ledger, journal, requestHeaders, newId: deps.newId, now, notDurable }, conversationId, content, options),
    async retry(operationId) {
      const entry = rearmed(ledger.find(operationId), now());
      if (entry) await ledger.save(entry);
    },
    discard: async (operationId) => (ledger.find(operationId)?.state === 'accepted' ? undefined : ledger.drop(operationId)),
    start: () => (started ??= restore({ ledger, journal, emit, trouble, notDurable, born })),
    // Logout: forgets every entry, journal included; resolves once writes on their way landed.
    async clear() {
      for (const entry of ledger.list()) ledger.forget(entry.operationId);
      journal.clear();
      await ledger.settled();
    },
    // Storage and the journal keep every entry for the next page.
    dispose() {
      stop.abort();
      ledger.close();
      for (const entry of ledger.list()) ledger.forget(entry.operationId);
      unsubscribe?.();
      channel?.close();
    },
  };
}
