/**
 * The client's way to its {@link Store}: applied events buffered and written in capped
 * transactions (write-buffer.ts), turn rows with their user message (turn-rows.ts), and
 * a guard that degrades to memory on the first failure (guarded-store.ts), so storage
 * failing never costs the session and no write ever rejects into the client.
 */
import type { LifelineError } from '../errors.js';
import { realStorage } from '../ports/storage.js';
import { realTimers, type Timers } from '../ports/timers.js';
import type { TurnEvent } from '../protocol/schemas.js';
import type { Diagnostic, ExternalStore, StorageStatus } from '../types.js';
import { createGuardedStore, type OutboxStorage } from './guarded-store.js';
import type { ActionState, LoadedTurn, PartEntry, Store, TurnRecord, TurnStatus } from './store.js';
import { createTurnRows, type TurnMessage, type TurnMeta } from './turn-rows.js';
import { createWriteBuffer } from './write-buffer.js';

export type { OutboxStorage } from './guarded-store.js';
export type { TurnMessage, TurnMeta } from './turn-rows.js';

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
  /** Epoch ms: row times, the retention sweep, diagnostics. */
  now: () => number;
  emit: (diagnostic: Diagnostic) => void;
  /** The flush timer. Default the real timers. */
  timers?: Timers;
  /** Asks for persistent storage (the storage port's `persist`). Default the real one. */
  persist?: () => Promise<boolean>;
}

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
  /** Forgets a disposed follower's description (it must not stay reachable, e.g. after `clearStorage()`). */
  untrack(turnId: string): void;
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

/** Creates the persistence layer over `options.store`. */
export function createPersistence(options: PersistenceOptions): Persistence {
  const { now, flushEvents } = options;
  const store = createGuardedStore(options.store, { ...options, persist: options.persist ?? realStorage.persist });
  const rows = createTurnRows(now, store.report);
  const buffer = createWriteBuffer({ ...options, maxWriteEvents: options.maxWriteEvents ?? flushEvents * 16, rows, store, timers: options.timers ?? realTimers });

  return {
    status: store.status,
    outbox: store.outbox,
    async open(persist) {
      await store.open(persist);
      const loaded = store.serial(async (target) => {
        const turns: LoadedTurn[] = [];
        for (const { id } of await rows.load(target, { unfinished: true })) {
          const turn = await rows.loadTurn(target, id);
          if (turn) turns.push(turn);
        }
        return turns;
      }, []);
      void store.serial(async (target) => void (await target.sweepEnded(now() - options.retentionMs)));
      return loaded;
    },
    loadTurn: (turnId) => store.serial((target) => rows.loadTurn(target, turnId)),
    loadConversation: (conversationId) => store.serial((target) => rows.load(target, { conversationId }), []),
    setMessage: rows.setMessage,
    message: rows.message,
    track: rows.track,
    untrack: rows.untrack,
    saveTurn(turnId) {
      // lastSeq 0: the store keeps the higher lastSeq of the chunks already written.
      void buffer.write(() => {
        const record = rows.row(turnId, 0);
        return record ? [{ record }] : [];
      });
    },
    append: buffer.append,
    end(turnId, folded) {
      // The ended turn's rest is queued now, so its fold lands right after it rather than behind a backlog of other turns.
      buffer.writeRest(turnId);
      // The fold: a row with the whole text.
      return buffer.write(() => {
        const base = rows.row(turnId, folded.lastSeq);
        const { status, text, actions, parts, error } = folded;
        return base ? [{ record: { ...base, status, text, actions: actions as ActionState[], parts: parts as PartEntry[], endedAt: base.updatedAt, ...(error && { error: error.toJSON() }) } }] : [];
      });
    },
    discard(turnId) {
      buffer.drop(turnId);
      void store.serial((target) => target.deleteTurn(turnId));
    },
    flush: buffer.flush,
    clear() {
      buffer.clear();
      rows.clearMessages();
      return store.clear();
    },
    async dispose() {
      await buffer.flush();
      buffer.stop();
      store.close();
    },
  };
}
