/**
 * The client's write path to its {@link Store}. Applied events are buffered per turn and
 * written as one chunk per turn per flush, every flush in one `write` (one IndexedDB
 * transaction): per-event transactions would cost
 * more than everything else the client does per event.
 *
 * A flush takes at most `maxWriteEvents` events and only one write is in flight. During a
 * burst the stream outruns IndexedDB: what piles up meanwhile goes out in capped writes,
 * one after the other, instead of one transaction of tens of thousands of events whose
 * cloning and commit block the page for a long task.
 *
 * Storage failing never costs the session: on the first error the layer switches to a
 * memory store for the rest of the session, reports `degraded` once, and goes on. No
 * write ever rejects into the client.
 */
import { createEmitter } from '../core/subscribable.js';
import { asStorageError, type LifelineError, type StorageError } from '../errors.js';
import type { MessageContent, TurnEvent } from '../protocol/schemas.js';
import type { Diagnostic, ExternalStore, StorageStatus } from '../types.js';
import { createMemoryStore } from './memory-store.js';
import type { ActionState, LoadedTurn, PartEntry, Store, TurnRecord, TurnStatus, TurnWrite } from './store.js';

/** What the persistence layer asks a followed turn when it writes its row. */
export interface TurnMeta {
  conversationId: string;
  messageId?: string;
  operationId?: string;
  status: TurnStatus;
  createdAt: number;
}

/** The final row of an ended turn. */
export interface FoldedTurn {
  status: TurnStatus;
  text: string;
  actions: readonly ActionState[];
  /** The message's entries (text parts and parts, in order). */
  parts: readonly PartEntry[];
  lastSeq: number;
  error?: LifelineError;
}

export interface PersistenceOptions {
  /** A store of kind `memory` (the app's choice) gives status `memory` rather than `ok`. */
  store: Store;
  /** Flush after this many ms. Default 16. */
  flushMs: number;
  /** …or once this many events are buffered. Default 256. */
  flushEvents: number;
  /**
   * Most events one flush (one transaction) writes; the rest follow in further flushes,
   * one in flight at a time. Default `flushEvents × 16` (4 096).
   */
  maxWriteEvents?: number;
  /** Ended turns older than this are swept. Default 7 days. */
  retentionMs: number;
  now: () => number;
  emit: (diagnostic: Diagnostic) => void;
}

/** The user message that started a turn, as its row keeps it. */
export interface TurnMessage {
  content: MessageContent;
  operationId?: string | undefined;
}

/** The outbox's share of storage, routed to the current (possibly degraded) store. */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'>;

export interface Persistence {
  readonly status: ExternalStore<StorageStatus>;
  /**
   * Opens the store (on failure continues in memory), asks `navigator.storage.persist()`
   * when `persist` (the answer goes in the status), then resolves with every unfinished
   * turn and its events (corrupt records reported and skipped) and sweeps ended turns
   * older than the retention. Never rejects.
   */
  open(persist?: boolean): Promise<LoadedTurn[]>;
  loadTurn(turnId: string): Promise<LoadedTurn | undefined>;
  /** Rows of one conversation's stored turns (folded ones with their text). */
  loadConversation(conversationId: string): Promise<TurnRecord[]>;
  /**
   * Records the user message that started the turn: its row carries it from the next
   * write on. Rows read back (every load above) teach it too.
   */
  setMessage(turnId: string, message: TurnMessage): void;
  /** The user message of a turn, once sent from here or read back with its row. */
  message(turnId: string): TurnMessage | undefined;
  /**
   * Registers how to describe a turn's row; needed before {@link append}/{@link saveTurn}.
   * `meta` answers `undefined` while the row cannot be written yet (conversation unknown).
   */
  track(turnId: string, meta: () => TurnMeta | undefined): void;
  /** Writes the turn's row now (in order with its chunks), e.g. at acceptance. */
  saveTurn(turnId: string): void;
  /** Hot path: buffers one applied event. */
  append(turnId: string, event: TurnEvent): void;
  /**
   * Writes the turn's buffered events (in capped writes, after those already queued),
   * then folds its chunks into its final row. Resolves once written (or given up).
   */
  end(turnId: string, folded: FoldedTurn): Promise<void>;
  /** Drops the turn's stored events and buffer (before a rebuild from seq 0). */
  discard(turnId: string): void;
  /**
   * Writes everything buffered, in writes of at most `maxWriteEvents`, one after the
   * other; resolves once the buffer is empty and written.
   */
  flush(): Promise<void>;
  /** Deletes everything of the namespace, in the degraded store and the original. */
  clear(): Promise<void>;
  readonly outbox: OutboxStorage;
  /** Flushes what is buffered, then closes the store. */
  dispose(): Promise<void>;
}

type Operation<T> = (store: Store) => Promise<T>;

/** Creates the persistence layer over `options.store`. */
export function createPersistence(options: PersistenceOptions): Persistence {
  const { now, emit, flushEvents } = options;
  const maxWrite = options.maxWriteEvents ?? flushEvents * 16;
  const primary = options.store;
  const listeners = createEmitter<void>();
  const metas = new Map<string, () => TurnMeta | undefined>();
  let store = primary;
  let status: StorageStatus = { state: 'opening', kind: store.kind };
  /** User messages per turn, written with every row of the turn (a row write replaces the row). */
  let messages = new Map<string, TurnMessage>();
  /** Buffered events per turn, in seq order; turns in the order they are served. */
  let buffers = new Map<string, TurnEvent[]>();
  let buffered = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The write loop while it runs. */
  let pump: Promise<void> | undefined;
  /** An explicit flush asked for everything: the loop runs until the buffer is empty. */
  let drain = false;
  /** Every operation runs after the previous one, so rows and chunks land in order. */
  let chain: Promise<unknown> = Promise.resolve();
  let disposed = false;

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
      if (used == store && status.state != 'degraded') {
        store = createMemoryStore();
        delete used.onTrouble;
        try {
          used.close();
        } catch {
          // Best effort: the broken store is not used again (an app's Store may throw here).
        }
        setStatus({ ...status, state: 'degraded', kind: used.kind, cause: asStorageError(error, 'Storage failed.') });
      }
      return operation(store);
    }
  };

  /**
   * Runs `operation` after every earlier one; never rejects. A failure even in memory (after
   * degrading) is reported and answers `fallback`.
   */
  const serial = <T>(operation: Operation<T>, fallback?: T): Promise<T> =>
    (chain = chain.then(() => guard(operation)).catch((error: unknown) => (report([asStorageError(error, 'Storage failed.')]), fallback))) as Promise<T>;

  /** The turn's row, or `undefined` while its conversation is unknown. */
  const row = (turnId: string, lastSeq: number): TurnRecord | undefined => {
    const meta = metas.get(turnId)?.();
    const message = messages.get(turnId);
    return meta && { ...meta, ...(message && { content: message.content }), id: turnId, lastSeq, updatedAt: now() };
  };

  /** Keeps the user message a stored row carries, so the turn's next row write keeps it too. */
  const learn = ({ id, content, operationId }: TurnRecord): void => {
    if (content !== undefined && !messages.has(id)) messages.set(id, { content, operationId });
  };

  /** Stored rows by `filter`: corrupt ones reported, user messages learnt. */
  const rows = async (target: Store, filter: Parameters<Store['loadTurns']>[0]): Promise<TurnRecord[]> => {
    const { items, skipped } = await target.loadTurns(filter);
    report(skipped);
    items.forEach(learn);
    return items;
  };

  const load = async (target: Store, turnId: string): Promise<LoadedTurn | undefined> => {
    const turn = await target.loadTurn(turnId);
    if (turn) {
      report(turn.skipped);
      learn(turn.record);
    }
    return turn;
  };

  /**
   * Queues one write (one transaction) of the items `take` builds when its turn comes (so
   * it takes all that is buffered by then, with the newest rows). Taken once: a retry on
   * the memory store writes the same events.
   */
  const write = (take: () => TurnWrite[]): Promise<void> => {
    let items: TurnWrite[] | undefined;
    return serial(async (target) => {
      items ??= take();
      if (items.length) await target.write(items);
    });
  };

  /** Adds a turn's events to `items`, one chunk per run of consecutive seqs (a skipped unknown event leaves a gap). */
  const chunks = (turnId: string, events: TurnEvent[], items: TurnWrite[] = []): TurnWrite[] => {
    let first = 0;
    events.forEach((event, i) => {
      if (events[i + 1]?.seq == event.seq + 1) return;
      const record = row(turnId, event.seq);
      const run = events.slice(first, (first = i + 1));
      if (record) items.push({ record, chunk: { turnId, firstSeq: run[0]!.seq, lastSeq: event.seq, events: run } });
    });
    return items;
  };

  /** Takes up to `maxWrite` buffered events; a turn only partly taken moves to the back, so one backlog does not hold the others back. */
  const take = (): TurnWrite[] => {
    let budget = maxWrite;
    const items: TurnWrite[] = [];
    for (const [turnId, events] of buffers) {
      if (!budget) break;
      const taken = events.splice(0, budget);
      budget -= taken.length;
      buffered -= taken.length;
      buffers.delete(turnId);
      if (events.length) buffers.set(turnId, events);
      chunks(turnId, taken, items);
    }
    return items;
  };

  const dropBuffer = (turnId: string): TurnEvent[] => {
    const events = buffers.get(turnId) ?? [];
    buffered -= events.length;
    buffers.delete(turnId);
    return events;
  };

  const schedule = (): void => {
    timer ??= setTimeout(() => {
      timer = undefined;
      if (!pump && buffered) startPump();
    }, options.flushMs);
  };

  /**
   * The write loop: one capped write, then another while a full flush is buffered (or an
   * explicit flush wants everything). Each write is its own step on the chain, so folds
   * and loads queued meanwhile run between writes. A remainder below `flushEvents` waits
   * for the timer.
   */
  const startPump = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    return (pump = (async () => {
      do await write(take);
      while (buffered && (drain || buffered >= flushEvents));
      pump = undefined;
      if (!buffered) drain = false;
      else if (!disposed) schedule();
    })());
  };

  const flush = (): Promise<void> => {
    if (!buffered) return chain.then(() => undefined);
    drain = true;
    return pump ?? startPump();
  };

  return {
    status: { getSnapshot: () => status, subscribe: listeners.subscribe },
    // Any method of the outbox's share, called on whichever store is current.
    outbox: new Proxy({} as OutboxStorage, {
      get: (_, method: keyof OutboxStorage) =>
        (...args: unknown[]) => guard((target) => (target[method] as (...a: unknown[]) => Promise<unknown>)(...args)),
    }),
    // A store that cannot open fails the guard: the layer goes on in memory, degraded.
    async open(persist) {
      await guard(async (target) => {
        target.onTrouble = (error) => report([error]);
        await target.open();
        if (status.state == 'opening') setStatus({ ...status, state: primary.kind == 'memory' ? 'memory' : 'ok' });
      });
      // No Storage API, or a refusal, answers false.
      if (persist) setStatus({ ...status, persisted: await Promise.resolve(globalThis.navigator?.storage?.persist?.()).then(Boolean, () => false) });
      const loaded = serial(async (target) => {
        const turns: LoadedTurn[] = [];
        for (const { id } of await rows(target, { unfinished: true })) {
          const turn = await load(target, id);
          if (turn) turns.push(turn);
        }
        return turns;
      }, []);
      void serial(async (target) => void (await target.sweepEnded(now() - options.retentionMs)));
      return loaded;
    },
    loadTurn: (turnId) => serial((target) => load(target, turnId)),
    loadConversation: (conversationId) => serial((target) => rows(target, { conversationId }), []),
    setMessage: (turnId, message) => void messages.set(turnId, message),
    message: (turnId) => messages.get(turnId),
    track: (turnId, meta) => void metas.set(turnId, meta),
    saveTurn(turnId) {
      // lastSeq 0: the store keeps the higher lastSeq of the chunks already written.
      void write(() => {
        const record = row(turnId, 0);
        return record ? [{ record }] : [];
      });
    },
    append(turnId, event) {
      if (disposed) return;
      const events = buffers.get(turnId);
      if (events) events.push(event);
      else buffers.set(turnId, [event]);
      if (++buffered < flushEvents) schedule();
      else pump ?? startPump();
    },
    end(turnId, folded) {
      // The ended turn's rest is queued now, in capped writes, so its fold lands right after
      // it rather than behind a backlog of other turns.
      const events = dropBuffer(turnId);
      while (events.length) {
        const part = events.splice(0, maxWrite);
        void write(() => chunks(turnId, part));
      }
      // The fold: a row with the whole text.
      return write(() => {
        const base = row(turnId, folded.lastSeq);
        const { status, text, actions, parts, error } = folded;
        return base ? [{ record: { ...base, status, text, actions: actions as ActionState[], parts: parts as PartEntry[], endedAt: base.updatedAt, ...(error && { error: error.toJSON() }) } }] : [];
      });
    },
    discard(turnId) {
      dropBuffer(turnId);
      void serial((target) => target.deleteTurn(turnId));
    },
    flush,
    clear() {
      buffers = new Map();
      buffered = 0;
      messages = new Map();
      return serial(async (target) => {
        await target.clear();
        // Logout must also wipe what the original store still holds after degrading.
        if (target != primary) await primary.clear().catch((error: unknown) => report([asStorageError(error, 'Clearing the original store failed.')]));
      });
    },
    async dispose() {
      await flush();
      disposed = true;
      store.close();
    },
  };
}
