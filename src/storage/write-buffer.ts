/**
 * Applied events on their way to storage. They are buffered per turn and written as one
 * chunk per turn per flush, every flush in one `write` (one IndexedDB transaction):
 * per-event transactions would cost more than everything else the client does per event.
 *
 * A flush takes at most `maxWriteEvents` events and only one write is in flight. During a
 * burst the stream outruns IndexedDB: what piles up meanwhile goes out in capped writes,
 * one after the other, instead of one transaction of tens of thousands of events whose
 * cloning and commit block the page for a long task.
 */
import type { TimerHandle, Timers } from '../ports/timers.js';
import type { DeltaEvent, LoggedEvent } from '../protocol/schemas.js';
import type { GuardedStore } from './guarded-store.js';
import type { TurnWrite } from './store.js';
import type { TurnRows } from './turn-rows.js';

export interface WriteBufferOptions {
  flushMs: number;
  flushEvents: number;
  maxWriteEvents: number;
  rows: TurnRows;
  store: GuardedStore;
  timers: Timers;
}

export interface WriteBuffer {
  /** Hot path: buffers one applied event. */
  append(turnId: string, event: LoggedEvent): void;
  /**
   * Queues one write (one transaction) of the items `take` builds when its turn comes (so
   * it takes all that is buffered by then, with the newest rows). Taken once: a retry on
   * the memory store writes the same events.
   */
  write(take: () => TurnWrite[]): Promise<void>;
  /** Queues the turn's buffered events now, in capped writes, ahead of other turns' backlog. */
  writeRest(turnId: string): void;
  /** Drops the turn's buffered events unwritten. */
  drop(turnId: string): void;
  /** Writes everything buffered, in capped writes one after the other; resolves once written. */
  flush(): Promise<void>;
  /** Drops everything buffered (logout). */
  clear(): void;
  /** Takes no more events (the client is going away). */
  stop(): void;
}

/** Queues one write of what `take` builds when its turn comes; taken once, so a retry on the memory store writes the same items. */
function queueWrite(store: GuardedStore, take: () => TurnWrite[]): Promise<void> {
  let items: TurnWrite[] | undefined;
  return store.serial(async (target) => {
    items ??= take();
    if (items.length) await target.write(items);
  });
}

/**
 * One turn's buffered events. A plain text delta (`{ turnId, seq, type: 'delta', text }`,
 * exactly as the decoders make it) whose seq is the first entry's plus its index is kept as
 * its text alone: a burst outruns IndexedDB (its writes wait until the stream lets the page
 * breathe), and holding tens of thousands of event objects until then cost the page more in
 * garbage collection than everything else it does per event, while their texts are held
 * anyway. The first entry is always an event; `takeFront` rebuilds the events.
 */
type Entries = (LoggedEvent | string)[];

/** What `append` keeps of `event` after `entries` (see {@link Entries}). */
function entryOf(turnId: string, event: LoggedEvent, entries: Entries): LoggedEvent | string {
  const { type, seq, text, partId, providerMetadata } = event as DeltaEvent;
  const plain = type === 'delta' && event.turnId === turnId && partId === undefined && providerMetadata === undefined;
  return plain && seq === (entries[0] as LoggedEvent).seq + entries.length ? text : event;
}

/** The first `count` entries as events, taken out of `entries`; the texts left still count from the new first entry. */
function takeFront(turnId: string, entries: Entries, count: number): LoggedEvent[] {
  const first = (entries[0] as LoggedEvent | undefined)?.seq ?? 0;
  const delta = (text: string, at: number): DeltaEvent => ({ turnId, seq: first + at, type: 'delta', text });
  const taken = entries.splice(0, count).map((entry, at) => (typeof entry === 'string' ? delta(entry, at) : entry));
  const next = entries[0];
  const rest = taken.length;
  if (typeof next === 'string') entries[0] = delta(next, rest);
  // Seqs that did not follow on (never on the client's own path) come first: every text becomes its event.
  else if (next && next.seq !== first + rest) entries.forEach((entry, at) => typeof entry === 'string' && (entries[at] = delta(entry, rest + at)));
  return taken;
}

/**
 * Takes up to `budget` events out of `buffers`, by turn in the order they are served; a
 * turn only partly taken moves to the back, so one backlog does not hold the others back.
 */
function takeUpTo(buffers: Map<string, Entries>, budget: number): [turnId: string, events: LoggedEvent[]][] {
  const taken: [string, LoggedEvent[]][] = [];
  for (const [turnId, events] of buffers) {
    if (!budget) break;
    const some = takeFront(turnId, events, budget);
    budget -= some.length;
    buffers.delete(turnId);
    if (events.length) buffers.set(turnId, events);
    taken.push([turnId, some]);
  }
  return taken;
}

/** Adds a turn's events to `items`, one chunk per run of consecutive seqs (a skipped unknown event leaves a gap). */
function chunks(rows: TurnRows, turnId: string, events: LoggedEvent[], items: TurnWrite[] = []): TurnWrite[] {
  let first = 0;
  events.forEach((event, i) => {
    if (events[i + 1]?.seq == event.seq + 1) return;
    const record = rows.row(turnId, event.seq);
    const run = events.slice(first, (first = i + 1));
    if (record) items.push({ record, chunk: { turnId, firstSeq: run[0]!.seq, lastSeq: event.seq, events: run } });
  });
  return items;
}

export function createWriteBuffer({ flushMs, flushEvents, maxWriteEvents, rows, store, timers }: WriteBufferOptions): WriteBuffer {
  /** Buffered events per turn, in seq order; turns in the order they are served. */
  let buffers = new Map<string, Entries>();
  let buffered = 0;
  let timer: TimerHandle | undefined;
  /** The write loop while it runs. */
  let pump: Promise<void> | undefined;
  /** An explicit flush asked for everything: the loop runs until the buffer is empty. */
  let drain = false;
  let stopped = false;

  const write = (take: () => TurnWrite[]): Promise<void> => queueWrite(store, take);
  const take = (): TurnWrite[] => {
    const items: TurnWrite[] = [];
    for (const [turnId, events] of takeUpTo(buffers, maxWriteEvents)) {
      buffered -= events.length;
      chunks(rows, turnId, events, items);
    }
    return items;
  };
  const drop = (turnId: string): LoggedEvent[] => {
    const entries = buffers.get(turnId) ?? [];
    buffered -= entries.length;
    buffers.delete(turnId);
    return takeFront(turnId, entries, entries.length);
  };
  const schedule = (): void => {
    timer ??= timers.set(() => {
      timer = undefined;
      if (!pump && buffered) startPump();
    }, flushMs);
  };

  // The write loop: one capped write, then more while a full flush is buffered (or a flush
  // wants everything). Each write is its own step on the store's queue, so folds and loads
  // queued meanwhile run between writes. A remainder below `flushEvents` waits for the timer.
  const startPump = (): Promise<void> => {
    timers.clear(timer);
    timer = undefined;
    return (pump = (async () => {
      do await write(take);
      while (buffered && (drain || buffered >= flushEvents));
      pump = undefined;
      if (!buffered) drain = false;
      else if (!stopped) schedule();
    })());
  };

  return {
    append(turnId, event) {
      if (stopped) return;
      const entries = buffers.get(turnId);
      if (entries) entries.push(entryOf(turnId, event, entries));
      else buffers.set(turnId, [event]);
      if (++buffered < flushEvents) schedule();
      else pump ?? startPump();
    },
    write,
    writeRest(turnId) {
      const events = drop(turnId);
      while (events.length) {
        const part = events.splice(0, maxWriteEvents);
        void write(() => chunks(rows, turnId, part));
      }
    },
    drop: (turnId) => void drop(turnId),
    flush() {
      if (!buffered) return store.idle();
      drain = true;
      return pump ?? startPump();
    },
    clear() {
      buffers = new Map();
      buffered = 0;
    },
    stop: () => void (stopped = true),
  };
}
