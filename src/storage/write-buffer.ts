/**
 * Applied events on their way to storage. They are buffered per turn and written as one
 * chunk per turn per flush, every flush in one `write` (one IndexedDB transaction):
 * per-event transactions would cost more than everything else the client does per event.
 *
 * A flush takes at most `maxWriteEvents` events and only one write is in flight. During a
 * burst the stream outruns IndexedDB: what piles up meanwhile goes out in capped writes,
 * one after the other, instead of one transaction of tens of thousands of events whose
 * cloning and commit block the page for a long task.
 *
 * When to write is a table (`BUFFER_TABLE`, rendered into docs/architecture.md): pure, keyed
 * by phase and input, read with how much is buffered. The runner below holds the events,
 * the timer and the write loop, and asks the table at every input, appends included.
 */
import type { TimerHandle, Timers } from '../ports/timers.js';
import type { DeltaEvent, LoggedEvent } from '../protocol/schemas.js';
import type { GuardedStore } from './guarded-store.js';
import type { TurnWrite } from './store.js';
import type { TurnRows } from './turn-rows.js';

/** How much is buffered, as the table reads it: 0 nothing, 1 less than `flushEvents`, 2 a full flush. */
export type Backlog = 0 | 1 | 2;

/**
 * The buffer's phase; nothing else is kept (how much is buffered is read, not stored).
 * `idle`: no timer, no write. `scheduled`: the flush timer runs. `writing`: the write loop's
 * one capped write is in flight; `draining` too, and a flush asked for everything, so the
 * loop goes on until nothing is buffered. `…-scheduled`: during that write an event armed
 * the timer, and the rest waits for that one, not a new one. `stopped`: takes no more
 * events (the client is going away); a write in flight ends, nothing follows.
 */
export type BufferPhase = 'idle' | 'scheduled' | 'writing' | 'writing-scheduled' | 'draining' | 'draining-scheduled' | 'stopped';
/** An event buffered, the flush timer fired, the loop's write ended, a flush asked (something buffered), stop. */
export type BufferInput = 'event' | 'timer' | 'written' | 'flush' | 'stop';

/**
 * The table (rendered into docs/architecture.md): each input's next phase, or three by
 * {@link Backlog} (nothing, some, a full flush buffered). An event arms the timer unless one
 * runs, or starts a write once a full flush is buffered; after each write the loop writes
 * again while a full flush is buffered (anything, when draining), and a rest waits for the
 * timer. An input a phase lacks means nothing there. Strings only: an append allocates nothing.
 */
export const BUFFER_TABLE: { readonly [P in BufferPhase]: { readonly [I in BufferInput]?: BufferPhase | readonly [BufferPhase, BufferPhase, BufferPhase] } } = {
  idle: { event: ['scheduled', 'scheduled', 'writing'], flush: 'draining' },
  // A timer outliving what it was armed for (written, dropped or cleared meanwhile) finds nothing.
  scheduled: { event: ['scheduled', 'scheduled', 'writing'], timer: ['idle', 'writing', 'writing'], flush: 'draining' },
  writing: { event: ['writing-scheduled', 'writing-scheduled', 'writing'], written: ['idle', 'scheduled', 'writing'], flush: 'draining' },
  'writing-scheduled': { timer: 'writing', written: ['scheduled', 'scheduled', 'writing-scheduled'], flush: 'draining-scheduled' },
  draining: { event: ['draining-scheduled', 'draining-scheduled', 'draining'], written: ['idle', 'draining', 'draining'] },
  'draining-scheduled': { timer: 'draining', written: ['scheduled', 'draining-scheduled', 'draining-scheduled'] },
  stopped: {},
};

/** Where `input` takes `phase` with `backlog` buffered (`stop`: `stopped`, from every phase); `undefined`: the input means nothing there. */
export function bufferStep(phase: BufferPhase, input: BufferInput, backlog: Backlog): BufferPhase | undefined {
  const next = input === 'stop' ? 'stopped' : BUFFER_TABLE[phase][input];
  return typeof next === 'string' ? next : next?.[backlog];
}

/** The write loop runs (its one write in flight): the phase hears the write's end. */
export const writes = (phase: BufferPhase): boolean => 'written' in BUFFER_TABLE[phase];
/** The flush timer runs: the phase hears it fire. */
export const timed = (phase: BufferPhase): boolean => 'timer' in BUFFER_TABLE[phase];

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
  let phase: BufferPhase = 'idle';
  let timer: TimerHandle | undefined;
  /** The write loop, while it {@link writes}. */
  let pump: Promise<void> | undefined;

  const write = (take: () => TurnWrite[]): Promise<void> => queueWrite(store, take);
  const take = (): TurnWrite[] => {
    const items: TurnWrite[] = [];
    for (const [turnId, events] of takeUpTo(buffers, maxWriteEvents)) {
      buffered -= events.length;
      chunks(rows, turnId, events, items);
    }
    return items;
  };
  /** Takes the turn's entries out of the buffer. */
  const detach = (turnId: string): Entries => {
    const entries = buffers.get(turnId) ?? [];
    buffered -= entries.length;
    buffers.delete(turnId);
    return entries;
  };

  /** Moves by the table; answers whether `input` means something here. The timer and the loop follow the phase. */
  const move = (input: BufferInput): boolean => {
    const next = bufferStep(phase, input, !buffered ? 0 : buffered < flushEvents ? 1 : 2);
    if (next === undefined) return false;
    if (next === phase) return true;
    const was = phase;
    phase = next;
    if (timed(next) !== (timer !== undefined)) timer = timer ? void timers.clear(timer) : timers.set(fire, flushMs);
    if (writes(next) && !writes(was)) pump = loop();
    return true;
  };
  const fire = (): void => {
    timer = undefined;
    move('timer');
  };
  // Each write is its own step on the store's queue, so folds and loads queued meanwhile run between writes.
  const loop = async (): Promise<void> => {
    do await write(take);
    while (move('written') && writes(phase));
  };

  return {
    append(turnId, event) {
      if (phase === 'stopped') return;
      const entries = buffers.get(turnId);
      if (entries) entries.push(entryOf(turnId, event, entries));
      else buffers.set(turnId, [event]);
      buffered++;
      move('event');
    },
    write,
    writeRest(turnId) {
      const entries = detach(turnId);
      // Each write rebuilds its part's events only when its turn comes, so the end of a burst
      // (often the whole turn still buffered) is not turned into event objects all at once,
      // ahead of the turn's completion. Its row is described then too, as the fold's is.
      for (let left = entries.length; left > 0; left -= maxWriteEvents) {
        void write(() => chunks(rows, turnId, takeFront(turnId, entries, maxWriteEvents)));
      }
    },
    drop: (turnId) => void detach(turnId),
    // With nothing buffered (or stopped), what is queued already is all there is to wait for.
    flush: () => (buffered && (move('flush'), writes(phase)) ? pump! : store.idle()),
    clear() {
      buffers = new Map();
      buffered = 0;
    },
    stop: () => void move('stop'),
  };
}
