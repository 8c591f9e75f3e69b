/**
 * The client's store behind a guard: storage failing never costs the session. On the
 * first error the guard switches to a memory store for the rest of the session, reports
 * `degraded` once (status and diagnostic), and runs the operation again there. Operations
 * queued through {@link GuardedStore.serial} run one after another and never reject.
 */
import { createEmitter } from '../core/subscribable.js';
import { asStorageError, type StorageError } from '../errors.js';
import type { Diagnostic, ExternalStore, StorageStatus } from '../types.js';
import { createMemoryStore } from './memory-store.js';
import type { Store } from './store.js';

/** What moves the guard's status: the store opened, or an operation on it failed. */
export type GuardEvent = 'opened' | 'failed';

/**
 * The guard's status as a table (rendered into docs/architecture.md): `opening` until the
 * store opened (`ok`, or `memory` when memory was chosen); any failure before degrading
 * switches to a memory store for the session (`degraded`, once; a failure there answers the
 * operation's fallback and changes nothing).
 */
export const GUARD_TABLE: { readonly [S in StorageStatus['state']]: { readonly [E in GuardEvent]?: readonly StorageStatus['state'][] } } = {
  opening: { opened: ['ok', 'memory'], failed: ['degraded'] },
  ok: { failed: ['degraded'] },
  memory: { failed: ['degraded'] },
  degraded: {},
};

/** Where `event` takes the guard from `state` (`undefined`: nowhere, it means nothing there); `memoryByChoice` picks `memory` over `ok`. */
export function guardStep(state: StorageStatus['state'], event: GuardEvent, memoryByChoice: boolean): StorageStatus['state'] | undefined {
  const to = GUARD_TABLE[state][event];
  if (!to) return undefined;
  return event === 'opened' ? (memoryByChoice ? 'memory' : 'ok') : to[0];
}

/** One operation on whichever store is current. */
export type Operation<T> = (store: Store) => Promise<T>;

/**
 * The outbox's share of storage, routed to the current (possibly degraded) store.
 * `durable()` answers whether a write that lands survives a reload (false once the store
 * fell back to memory, or is memory by choice); absent: always.
 */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'> & { durable?(): boolean };

export interface GuardedStore {
  readonly status: ExternalStore<StorageStatus>;
  /**
   * Runs `operation` after every earlier one; never rejects. A failure even in memory (after
   * degrading) is reported and answers `fallback`.
   */
  serial<T>(operation: Operation<T>, fallback?: T): Promise<T>;
  /** Resolves once every operation queued so far has run. */
  idle(): Promise<void>;
  /** Reports storage errors as diagnostics (skipped records, failures that cost nothing). */
  report(errors?: readonly StorageError[]): void;
  /** Opens the store (a failure degrades); asks the storage port's `persist()` when `persist` (the answer goes in the status). */
  open(persist?: boolean): Promise<void>;
  /** Deletes everything of the namespace, in the current store and (after degrading) the original too. */
  clear(): Promise<void>;
  /** Closes the current store. */
  close(): void;
  readonly outbox: OutboxStorage;
}

export interface GuardedStoreOptions {
  /** Epoch ms, for diagnostics. */
  now: () => number;
  emit: (diagnostic: Diagnostic) => void;
  /** The storage port's `persist()`. */
  persist: () => Promise<boolean>;
}

export function createGuardedStore(primary: Store, { now, emit, persist: askPersist }: GuardedStoreOptions): GuardedStore {
  const listeners = createEmitter<void>();
  let store = primary;
  let status: StorageStatus = { state: 'opening', kind: store.kind };
  /** Every operation runs after the previous one, so rows and chunks land in order. */
  let chain: Promise<unknown> = Promise.resolve();

  const setStatus = (next: StorageStatus): void => {
    status = next;
    emit({ type: 'storage', at: now(), status });
    listeners.emit();
  };
  const report = (errors: readonly StorageError[] = []): void => errors.forEach((error) => emit({ type: 'storage-error', at: now(), error }));

  /** Runs `operation` on the current store; on failure degrades to memory (once) and runs it there. */
  const guard = async <T>(operation: Operation<T>): Promise<T> => {
    const used = store;
    try {
      return await operation(used);
    } catch (error) {
      const next = used == store ? guardStep(status.state, 'failed', false) : undefined;
      if (next) {
        store = createMemoryStore();
        delete used.onTrouble;
        try {
          used.close();
        } catch {
          // Best effort: the broken store is not used again (an app's Store may throw here).
        }
        setStatus({ ...status, state: next, kind: used.kind, cause: asStorageError(error, 'Storage failed.') });
      }
      return operation(store);
    }
  };

  const serial = <T>(operation: Operation<T>, fallback?: T): Promise<T> =>
    (chain = chain.then(() => guard(operation)).catch((error: unknown) => (report([asStorageError(error, 'Storage failed.')]), fallback))) as Promise<T>;

  return {
    status: { getSnapshot: () => status, subscribe: listeners.subscribe },
    serial,
    idle: () => chain.then(() => undefined),
    report,
    async open(persist) {
      // A store that cannot open fails the guard: the layer goes on in memory, degraded.
      await guard(async (target) => {
        target.onTrouble = (error) => report([error]);
        await target.open();
        const next = guardStep(status.state, 'opened', primary.kind == 'memory');
        if (next) setStatus({ ...status, state: next });
      });
      // No Storage API, or a refusal, answers false.
      if (persist) setStatus({ ...status, persisted: await askPersist().catch(() => false) });
    },
    clear: () =>
      serial(async (target) => {
        await target.clear();
        // Logout must also wipe what the original store still holds after degrading.
        if (target != primary) await primary.clear().catch((error: unknown) => report([asStorageError(error, 'Clearing the original store failed.')]));
      }),
    close: () => store.close(),
    // Any method of the outbox's share, called on whichever store is current; `durable` answers whether that store survives a reload.
    outbox: new Proxy({} as OutboxStorage, {
      get: (_, method: keyof OutboxStorage) =>
        method === 'durable'
          ? () => status.state === 'ok'
          : (...args: unknown[]) => guard((target) => (target[method as Exclude<keyof OutboxStorage, 'durable'>] as (...a: unknown[]) => Promise<unknown>)(...args)),
    }),
  };
}
