/**
 * The client's write path to its {@link Store}. Applied events are buffered per turn and
 * written as one chunk per turn per flush, every flush in one call (one IndexedDB
 * transaction when the store has `appendChunks`): per-event transactions would cost
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
import type { ActionState, EventChunk, LoadedTurn, OutboxRecord, Store, TurnRecord, TurnStatus } from './store.js';

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
  lastSeq: number;
  error?: LifelineError;
}

export interface PersistenceOptions {
  store: Store;
  /** The app chose memory: status `memory` rather than `ok`. */
  memoryByChoice: boolean;
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
  operationId?: string;
}

/** The outbox's share of storage, routed to the current (possibly degraded) store. */
export type OutboxStorage = Pick<Store, 'loadOutbox' | 'putOutbox' | 'deleteOutbox' | 'tryLease' | 'releaseLease'>;

export interface Persistence {
  readonly status: ExternalStore<StorageStatus>;
  /** The store in use now (a memory store once degraded). */
  readonly store: Store;
  /** Opens the store; on failure continues in memory. Never rejects. */
  open(): Promise<void>;
  /** Every unfinished turn with its events; corrupt records are reported and skipped. */
  loadUnfinished(): Promise<LoadedTurn[]>;
  loadTurn(turnId: string): Promise<LoadedTurn | undefined>;
  /** Rows of one conversation's stored turns (folded ones with their text), oldest first. */
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
  /** Deletes ended turns older than the retention. */
  sweep(): Promise<void>;
  /** Deletes everything of the namespace, in the degraded store and the original. */
  clear(): Promise<void>;
  readonly outbox: OutboxStorage;
  /** Records the answer of `navigator.storage.persist()` in the status. */
  setPersisted(persisted: boolean): void;
  /** Flushes what is buffered, then closes the store. */
  dispose(): Promise<void>;
}

type Operation<T> = (store: Store) => Promise<T>;

/** Default of {@link PersistenceOptions.maxWriteEvents}, as a multiple of `flushEvents`. */
const WRITE_EVENTS_PER_FLUSH_EVENTS = 16;

/**
 * A turn's unwritten events. Writes take them from `start` on; the array is replaced once
 * drained (or compacted once mostly taken), so taking is O(events taken), not O(buffer).
 */
interface TurnBuffer {
  events: TurnEvent[];
  start: number;
}

/** Creates the persistence layer over `options.store`. */
export function createPersistence(options: PersistenceOptions): Persistence {
  return new PersistenceImpl(options);
}

class PersistenceImpl implements Persistence {
  readonly #options: PersistenceOptions;
  readonly #primary: Store;
  #store: Store;
  #status: StorageStatus;
  readonly #statusListeners = createEmitter<void>();
  readonly status: ExternalStore<StorageStatus>;
  readonly outbox: OutboxStorage;

  readonly #meta = new Map<string, () => TurnMeta | undefined>();
  /** User messages per turn, written with every row of the turn (a row write replaces the row). */
  #messages = new Map<string, TurnMessage>();
  /** Last seq written per turn, so a row written on its own never moves its lastSeq back. */
  readonly #written = new Map<string, number>();
  /** Buffered events per turn, in arrival (= seq) order; turns in the order they are served. */
  #buffers = new Map<string, TurnBuffer>();
  #buffered = 0;
  readonly #maxWriteEvents: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The write loop while it runs: one capped write at a time, queued on {@link #chain}. */
  #pump: Promise<void> | undefined;
  /** An explicit flush asked for everything: the loop runs until the buffer is empty. */
  #drain = false;
  /** Every write runs after the previous one, so rows and chunks land in order. */
  #chain: Promise<unknown> = Promise.resolve();
  #disposed = false;

  constructor(options: PersistenceOptions) {
    this.#options = options;
    this.#primary = options.store;
    this.#store = options.store;
    this.#status = { state: 'opening', kind: options.store.kind };
    this.#maxWriteEvents = Math.max(1, Math.floor(options.maxWriteEvents ?? options.flushEvents * WRITE_EVENTS_PER_FLUSH_EVENTS));
    this.status = {
      getSnapshot: () => this.#status,
      subscribe: (listener) => this.#statusListeners.subscribe(listener),
    };
    this.outbox = {
      loadOutbox: () => this.#guard((store) => store.loadOutbox()),
      putOutbox: (record: OutboxRecord) => this.#guard((store) => store.putOutbox(record)),
      deleteOutbox: (operationId: string) => this.#guard((store) => store.deleteOutbox(operationId)),
      tryLease: (name: string, owner: string, ttlMs: number, now: number) => this.#guard((store) => store.tryLease(name, owner, ttlMs, now)),
      releaseLease: (name: string, owner: string) => this.#guard((store) => store.releaseLease(name, owner)),
    };
  }

  get store(): Store {
    return this.#store;
  }

  async open(): Promise<void> {
    this.#store.onTrouble = (error) => this.#options.emit({ type: 'storage-error', at: this.#options.now(), error });
    try {
      await this.#store.open();
      if (this.#status.state === 'opening') this.#setStatus({ state: this.#options.memoryByChoice ? 'memory' : 'ok', kind: this.#store.kind });
    } catch (error) {
      this.#degrade(error);
    }
  }

  loadUnfinished(): Promise<LoadedTurn[]> {
    return this.#serial(async (store) => {
      const { items, skipped } = await store.loadTurns({ unfinished: true });
      this.#reportSkipped(skipped);
      const loaded: LoadedTurn[] = [];
      for (const record of items) {
        const turn = await store.loadTurn(record.id);
        if (turn === undefined) continue;
        this.#reportSkipped(turn.skipped ?? []);
        this.#learn(turn.record);
        loaded.push(turn);
      }
      return loaded;
    }, []);
  }

  loadTurn(turnId: string): Promise<LoadedTurn | undefined> {
    return this.#serial(async (store) => {
      const turn = await store.loadTurn(turnId);
      this.#reportSkipped(turn?.skipped ?? []);
      if (turn !== undefined) this.#learn(turn.record);
      return turn;
    }, undefined);
  }

  loadConversation(conversationId: string): Promise<TurnRecord[]> {
    return this.#serial(async (store) => {
      const { items, skipped } = await store.loadTurns({ conversationId });
      this.#reportSkipped(skipped);
      for (const record of items) this.#learn(record);
      return items;
    }, []);
  }

  setMessage(turnId: string, message: TurnMessage): void {
    this.#messages.set(turnId, message);
  }

  message(turnId: string): TurnMessage | undefined {
    return this.#messages.get(turnId);
  }

  track(turnId: string, meta: () => TurnMeta | undefined): void {
    this.#meta.set(turnId, meta);
  }

  saveTurn(turnId: string): void {
    // Only events already written count in the row's lastSeq; buffered ones follow with their chunks.
    void this.#serial(async (store) => {
      const record = this.#record(turnId, this.#written.get(turnId) ?? 0);
      if (record !== undefined) await store.putTurn(record);
    }, undefined);
  }

  append(turnId: string, event: TurnEvent): void {
    if (this.#disposed) return;
    let buffer = this.#buffers.get(turnId);
    if (buffer === undefined) {
      buffer = { events: [], start: 0 };
      this.#buffers.set(turnId, buffer);
    }
    buffer.events.push(event);
    this.#buffered += 1;
    if (this.#buffered >= this.#options.flushEvents) {
      if (this.#pump === undefined) this.#startPump();
    } else {
      this.#timer ??= setTimeout(this.#onTimer, this.#options.flushMs);
    }
  }

  flush(): Promise<void> {
    if (this.#buffered === 0) return this.#chain.then(() => undefined);
    this.#drain = true;
    return this.#pump ?? this.#startPump();
  }

  end(turnId: string, folded: FoldedTurn): Promise<void> {
    // The ended turn's rest is queued now, so its fold lands right after it rather than
    // behind a backlog of other turns; other turns keep their own pace.
    const buffer = this.#buffers.get(turnId);
    if (buffer !== undefined) {
      this.#dropBuffer(turnId);
      const { events, start } = buffer;
      for (let from = start; from < events.length; from += this.#maxWriteEvents) {
        const to = Math.min(events.length, from + this.#maxWriteEvents);
        void this.#serial((store) => this.#writeItems(store, this.#chunkItems(turnId, events, from, to, [])), undefined);
      }
    }
    return this.#serial(async (store) => {
      const base = this.#record(turnId, folded.lastSeq);
      if (base === undefined) return;
      const now = this.#options.now();
      const record: TurnRecord = {
        ...base,
        status: folded.status,
        lastSeq: folded.lastSeq,
        text: folded.text,
        actions: [...folded.actions],
        endedAt: now,
        updatedAt: now,
        ...(folded.error === undefined ? {} : { error: folded.error.toJSON() }),
      };
      await store.foldTurn(record);
    }, undefined);
  }

  discard(turnId: string): void {
    this.#dropBuffer(turnId);
    this.#written.delete(turnId);
    void this.#serial((store) => store.deleteTurn(turnId), undefined);
  }

  sweep(): Promise<void> {
    return this.#serial(async (store) => {
      await store.sweepEnded(this.#options.now() - this.#options.retentionMs);
    }, undefined);
  }

  clear(): Promise<void> {
    this.#buffers = new Map();
    this.#buffered = 0;
    this.#messages = new Map();
    return this.#serial(async (store) => {
      await store.clear();
      // Logout must wipe what the original store still holds even after degrading.
      if (store !== this.#primary) {
        await this.#primary.clear().catch((error: unknown) =>
          this.#options.emit({ type: 'storage-error', at: this.#options.now(), error: asStorageError(error, 'Clearing the original store failed.') }),
        );
      }
    }, undefined);
  }

  async dispose(): Promise<void> {
    await this.flush();
    this.#disposed = true;
    this.#store.close();
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    if (this.#pump === undefined && this.#buffered > 0) this.#startPump();
  };

  /**
   * Runs the write loop: one capped write, then another while a full flush is buffered
   * (or an explicit flush wants everything). Each write is its own step on the chain, so
   * folds and loads queued meanwhile run between writes, and the page gets the event loop
   * back between transactions. A remainder below `flushEvents` waits for the timer.
   */
  #startPump(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#pump = this.#runPump();
    return this.#pump;
  }

  async #runPump(): Promise<void> {
    let taken: number;
    do {
      taken = await this.#serial((store) => this.#writeBuffered(store), 0);
    } while (taken > 0 && this.#buffered > 0 && (this.#drain || this.#buffered >= this.#options.flushEvents));
    // Decided and cleared in one step: a flush() from now on starts a new loop.
    this.#pump = undefined;
    if (this.#buffered === 0) this.#drain = false;
    else if (!this.#disposed) this.#timer ??= setTimeout(this.#onTimer, this.#options.flushMs);
  }

  #dropBuffer(turnId: string): void {
    const dropped = this.#buffers.get(turnId);
    if (dropped === undefined) return;
    this.#buffered -= dropped.events.length - dropped.start;
    this.#buffers.delete(turnId);
  }

  /**
   * Writes up to `maxWriteEvents` buffered events, in one call: contiguous runs become
   * chunks. Returns how many it took. A turn only partly taken moves to the back, so a long backlog of one turn
   * does not hold the others' events back.
   */
  async #writeBuffered(store: Store): Promise<number> {
    let budget = this.#maxWriteEvents;
    const items: { record: TurnRecord; chunk: EventChunk }[] = [];
    for (const [turnId, buffer] of this.#buffers) {
      if (budget === 0) break;
      const { events, start } = buffer;
      const end = Math.min(events.length, start + budget);
      budget -= end - start;
      this.#buffered -= end - start;
      this.#buffers.delete(turnId);
      if (end < events.length) {
        this.#buffers.set(turnId, buffer);
        // Compact once more than half is taken: each event is copied at most once more.
        if (end * 2 > events.length) {
          buffer.events = events.slice(end);
          buffer.start = 0;
        } else {
          buffer.start = end;
        }
      }
      this.#chunkItems(turnId, events, start, end, items);
    }
    await this.#writeItems(store, items);
    return this.#maxWriteEvents - budget;
  }

  /** Adds `events[start..end)` of a turn to `items`, one chunk per contiguous run. */
  #chunkItems(turnId: string, events: readonly TurnEvent[], start: number, end: number, items: { record: TurnRecord; chunk: EventChunk }[]): typeof items {
    // A skipped seq (an unknown event type) splits the run: chunks must be contiguous.
    let first = start;
    for (let i = start + 1; i <= end; i++) {
      if (i < end && (events[i] as TurnEvent).seq === (events[i - 1] as TurnEvent).seq + 1) continue;
      const run = events.slice(first, i);
      const lastSeq = (run[run.length - 1] as TurnEvent).seq;
      const record = this.#record(turnId, lastSeq);
      if (record !== undefined) items.push({ record, chunk: { turnId, firstSeq: (run[0] as TurnEvent).seq, lastSeq, events: run } });
      first = i;
    }
    this.#written.set(turnId, (events[end - 1] as TurnEvent).seq);
    return items;
  }

  /** One call for every chunk: one transaction when the store has `appendChunks`. */
  async #writeItems(store: Store, items: readonly { record: TurnRecord; chunk: EventChunk }[]): Promise<void> {
    if (items.length === 0) return;
    if (store.appendChunks !== undefined) {
      await store.appendChunks(items);
      return;
    }
    for (const { record, chunk } of items) await store.appendChunk(record, chunk);
  }

  #record(turnId: string, lastSeq: number): TurnRecord | undefined {
    const meta = this.#meta.get(turnId)?.();
    if (meta === undefined) return undefined;
    const message = this.#messages.get(turnId);
    return {
      id: turnId,
      conversationId: meta.conversationId,
      ...(meta.messageId === undefined ? {} : { messageId: meta.messageId }),
      ...(meta.operationId === undefined ? {} : { operationId: meta.operationId }),
      ...(message === undefined ? {} : { content: message.content }),
      status: meta.status,
      lastSeq,
      createdAt: meta.createdAt,
      updatedAt: this.#options.now(),
    };
  }

  /** Keeps the user message a stored row carries, so the turn's next row write keeps it too. */
  #learn(record: TurnRecord): void {
    if (record.content === undefined || this.#messages.has(record.id)) return;
    this.#messages.set(record.id, { content: record.content, ...(record.operationId === undefined ? {} : { operationId: record.operationId }) });
  }

  /** Runs `operation` after every earlier write; never rejects (`fallback` on failure). */
  #serial<T>(operation: Operation<T>, fallback: T): Promise<T> {
    const run = this.#chain.then(() => this.#guard(operation)).catch(() => fallback);
    this.#chain = run;
    return run;
  }

  /**
   * Runs `operation` on the current store; on failure degrades to memory and runs it
   * there, so the session keeps working. Rejects only if the memory store fails too.
   */
  async #guard<T>(operation: Operation<T>): Promise<T> {
    const store = this.#store;
    try {
      return await operation(store);
    } catch (error) {
      if (store !== this.#store) return operation(this.#store);
      this.#degrade(error);
      return operation(this.#store);
    }
  }

  #degrade(error: unknown): void {
    if (this.#status.state === 'degraded') return;
    const cause = asStorageError(error, 'The store failed.');
    const failed = this.#store;
    this.#store = createMemoryStore();
    this.#setStatus({ state: 'degraded', kind: failed.kind, cause, ...(this.#status.persisted === undefined ? {} : { persisted: this.#status.persisted }) });
    delete failed.onTrouble;
    try {
      failed.close();
    } catch {
      // Closing a broken store is best effort; it is not used again.
    }
  }

  /** Records the answer of `navigator.storage.persist()`. */
  setPersisted(persisted: boolean): void {
    this.#setStatus({ ...this.#status, persisted });
  }

  #setStatus(status: StorageStatus): void {
    this.#status = status;
    this.#options.emit({ type: 'storage', at: this.#options.now(), status });
    this.#statusListeners.emit();
  }

  #reportSkipped(skipped: readonly StorageError[]): void {
    for (const error of skipped) this.#options.emit({ type: 'storage-error', at: this.#options.now(), error });
  }
}
