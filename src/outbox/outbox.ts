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
import { asStorageError, type StorageError } from '../errors.js';
import type { Diagnostic } from '../types.js';
import { isPending, newEntry, rearmed } from './entry-state.js';
import { realStorage } from '../ports/storage.js';
import { realTabs } from '../ports/tabs.js';
import { createJournal } from './journal.js';
import { createLedger } from './ledger.js';
import { createSchedule } from './schedule.js';
import { createSender, type SenderDeps } from './sender.js';
import { checkedContent } from './submit.js';
import type { Emit, OutboxChannel, OutboxController, OutboxDeps } from './types.js';

export type { Enqueued, OutboxChannel, OutboxController, OutboxDeps, OutboxLocks, OutboxStorage } from './types.js';
export type { NetworkMonitor } from '../ports/network.js';

/** The channel other tabs' notices arrive on: `new BroadcastChannel(name)` by default, where there is one. */
function openChannel(factory: OutboxDeps['channel'], name: string): OutboxChannel | undefined {
  return factory === undefined ? realTabs.channel(name) : (factory?.(name) ?? undefined);
}

/** How the sending tab leads, posts and retries: the client's plumbing and the outbox's settings with their defaults. */
function sendingOptions(deps: OutboxDeps, trouble: (error: unknown) => void, signal: AbortSignal): Omit<SenderDeps, 'ledger' | 'busy' | 'emit' | 'name' | 'online'> {
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
  const journal = createJournal(deps.journal === undefined ? realStorage.pageStorage() : (deps.journal ?? undefined), name);
  const channel = openChannel(deps.channel, name);
  const emit: Emit = (diagnostic) => deps.emit({ ...diagnostic, at: now() } as Diagnostic);
  const trouble = (error: unknown): StorageError => {
    const storageError = asStorageError(error, 'Outbox storage failed.');
    if (!stop.signal.aborted) emit({ type: 'storage-error', error: storageError });
    return storageError;
  };
  const ledger = createLedger({
    storage,
    journal,
    busy,
    trouble,
    onAccepted: deps.onAccepted,
    acceptedRetentionMs: deps.acceptedRetentionMs ?? 1e4,
    timers: deps.timers,
    notify: (notice) => channel?.postMessage(notice),
    changed: () => (listeners.emit(), sender.poke()),
  });
  const sender = createSender({ ...sendingOptions(deps, trouble, stop.signal), ledger, busy, emit, name, online: network?.online() ?? true });
  channel?.addEventListener('message', ({ data }) => (typeof data === 'string' ? ledger.forget(data) : void ledger.reload()));
  const unsubscribe = network?.subscribe(sender.setOnline);
  let started: Promise<void> | undefined;

  return {
    entries: { getSnapshot: ledger.list, subscribe: listeners.subscribe },
    enqueue(conversationId, content) {
      const entry = newEntry(deps.newId(), conversationId, checkedContent(conversationId, content), now(), ledger.list());
      // Synchronous: durable before `send()` returns, whatever happens to the page next.
      journal.write(entry);
      // Its first attempt writes `sending` before posting, and writes land in order: never posted before this write.
      const written = ledger.save(entry).then((error) => {
        if (error) throw error;
        journal.remove(entry.operationId);
      });
      // Callers may ignore `written`; the failure is already a diagnostic.
      written.catch(() => undefined);
      return { operationId: entry.operationId, written };
    },
    async retry(operationId) {
      const entry = rearmed(ledger.find(operationId), now());
      if (entry) await ledger.save(entry);
    },
    discard: async (operationId) => (ledger.find(operationId)?.state === 'accepted' ? undefined : ledger.drop(operationId)),
    start: () =>
      (started ??= ledger.reload().then(async (skipped) => {
        for (const error of skipped) emit({ type: 'storage-error', error });
        // What a page journaled but did not get stored; an entry storage holds may have moved on since: left as stored.
        await journal.adopt(async (entry) => (ledger.find(entry.operationId) ? undefined : ledger.save(entry)), trouble);
        const count = ledger.list().filter((entry) => isPending(entry) && entry.createdAt < born).length;
        if (count) emit({ type: 'outbox-replay', count });
      })),
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
