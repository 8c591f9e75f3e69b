/**
 * Page side of the storage benchmark (bench/storage.bench.ts). Every step is its own
 * page load, so each hydration is measured on a cold page (fresh document, first
 * connection), as after a reload. The page measures itself and posts its figures.
 *
 * The bench's bundler redirects every `../src/…` import to `../dist/…`: this file is
 * type-checked against the sources (no build needed for `npm run typecheck`) and runs
 * the build.
 */
import type { TurnEvent } from '../src/protocol/schemas.js';
import { createIndexedDbStore } from '../src/storage/indexeddb-store.js';
import { createPersistence } from '../src/storage/persistence.js';
import type { ActionState, TurnRecord } from '../src/storage/store.js';

export type StepConfig =
  | { kind: 'setup'; namespace: string; events: number; chunkEvents: number }
  | { kind: 'hydrate'; namespace: string; turnId: 'folded' | 'chunked'; events: number }
  | {
      kind: 'append';
      namespace: string;
      path: 'persistence' | 'store';
      events: number;
      chunkEvents: number;
      eventsPerTask: number;
      /** Persistence path: events per second the producer keeps to; unset = as fast as the page can. */
      paceEventsPerSecond?: number;
    };

export interface HydrateFigures {
  openMs: number;
  loadMs: number;
  textMs: number;
  totalMs: number;
  events: number;
  textLength: number;
}

export interface AppendFigures {
  events: number;
  /** First append to the last write durable (`tx.done`). */
  ms: number;
  readwriteTx: number;
  longTasks: number;
  longTaskMaxMs: number;
  longTaskTotalMs: number;
  /** Persistence path: storage status changes and storage errors reported (should be none). */
  problems: string[];
}

// ------------------------------------------------------------------ probes

const longTasks: { start: number; duration: number }[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) longTasks.push({ start: entry.startTime, duration: entry.duration });
}).observe({ type: 'longtask', buffered: true });

const txStarts: number[] = [];
const transaction = IDBDatabase.prototype.transaction;
IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
  const tx = transaction.apply(this, args);
  if (tx.mode === 'readwrite') txStarts.push(performance.now());
  return tx;
};

function windowStats(t0: number, t1: number) {
  const tasks = longTasks.filter((task) => task.start + task.duration >= t0 && task.start <= t1);
  return {
    readwriteTx: txStarts.filter((start) => start >= t0 && start <= t1).length,
    longTasks: tasks.length,
    longTaskMaxMs: tasks.reduce((max, task) => Math.max(max, task.duration), 0),
    longTaskTotalMs: tasks.reduce((sum, task) => sum + task.duration, 0),
  };
}

// ------------------------------------------------------------------ data

const WORDS = ['the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', ',', ' café', ' 漢字', ' 🙂', '.', '\n'];

/** A turn of `count` events: turn.start, deltas, and a tool call every 1 000 events. */
function makeEvents(turnId: string, count: number): TurnEvent[] {
  const events: TurnEvent[] = [
    { turnId, seq: 1, type: 'turn.start', messageId: 'bench-message', conversationId: 'bench', createdAt: new Date(0).toISOString() },
  ];
  for (let seq = 2; seq <= count; seq++) {
    if (seq % 1000 === 0) {
      events.push({ turnId, seq, type: 'action', callId: `call-${seq}`, name: 'search', status: 'completed', input: { q: 'fox' }, output: { hits: seq } });
    } else {
      events.push({ turnId, seq, type: 'delta', text: WORDS[(seq * 7919) % WORDS.length] as string });
    }
  }
  return events;
}

function textOf(events: readonly { type: string; text?: string }[]): string {
  const parts: string[] = [];
  for (const event of events) if (event.type === 'delta') parts.push(event.text ?? "");
  return parts.join('');
}

function actionsOf(events: readonly TurnEvent[]): ActionState[] {
  return events.flatMap((event) =>
    event.type === 'action'
      ? [{ callId: event.callId, name: event.name, status: event.status, input: event.input, output: event.output, seq: event.seq }]
      : [],
  );
}

function row(id: string, lastSeq: number, extra: Partial<TurnRecord> = {}): TurnRecord {
  return { id, conversationId: 'bench', status: 'streaming', lastSeq, createdAt: 0, updatedAt: Date.now(), ...extra };
}

function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error(`deleting ${name} is blocked`));
  });
}

/** A macrotask boundary without setTimeout's 4 ms clamp: the next network read. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });
}

// ------------------------------------------------------------------ steps

async function setup(config: Extract<StepConfig, { kind: 'setup' }>): Promise<object> {
  await deleteDatabase(`lifeline:${config.namespace}`);
  const store = createIndexedDbStore({ namespace: config.namespace });
  const folded = makeEvents('folded', config.events);
  await store.write([{ record: row('folded', config.events, { status: 'complete', endedAt: Date.now(), text: textOf(folded), actions: actionsOf(folded) }) }]);
  const chunked = makeEvents('chunked', config.events);
  for (let first = 0; first < chunked.length; first += config.chunkEvents) {
    const events = chunked.slice(first, first + config.chunkEvents);
    const lastSeq = (events[events.length - 1] as TurnEvent).seq;
    await store.write([{ record: row('chunked', lastSeq), chunk: { turnId: 'chunked', firstSeq: first + 1, lastSeq, events } }]);
  }
  store.close();
  return {};
}

async function hydrate(config: Extract<StepConfig, { kind: 'hydrate' }>): Promise<HydrateFigures> {
  const t0 = performance.now();
  const store = createIndexedDbStore({ namespace: config.namespace });
  await store.open();
  const t1 = performance.now();
  const loaded = await store.loadTurn(config.turnId);
  const t2 = performance.now();
  if (loaded === undefined) throw new Error(`turn ${config.turnId} is not stored`);
  const text = loaded.record.text ?? textOf(loaded.events);
  const t3 = performance.now();
  // Checked after the clock stopped: the text must be exactly the one stored.
  if (text !== textOf(makeEvents(config.turnId, config.events))) throw new Error(`hydrated text of ${config.turnId} differs from the stored turn`);
  store.close();
  return { openMs: t1 - t0, loadMs: t2 - t1, textMs: t3 - t2, totalMs: t3 - t0, events: loaded.record.lastSeq, textLength: text.length };
}

async function append(config: Extract<StepConfig, { kind: 'append' }>): Promise<AppendFigures> {
  await deleteDatabase(`lifeline:${config.namespace}`);
  const turnId = 'appended';
  const events = makeEvents(turnId, config.events);
  const store = createIndexedDbStore({ namespace: config.namespace });
  const problems: string[] = [];
  let t0: number;
  if (config.path === 'store') {
    await store.open();
    t0 = performance.now();
    for (let first = 0; first < events.length; first += config.chunkEvents) {
      const run = events.slice(first, first + config.chunkEvents);
      const lastSeq = (run[run.length - 1] as TurnEvent).seq;
      await store.write([{ record: row(turnId, lastSeq), chunk: { turnId, firstSeq: first + 1, lastSeq, events: run } }]);
    }
  } else {
    const persistence = createPersistence({
      store,
      flushMs: 16,
      flushEvents: config.chunkEvents,
      retentionMs: 7 * 24 * 3600_000,
      now: Date.now,
      emit: (diagnostic) => {
        if (diagnostic.type === 'storage-error') problems.push(`${diagnostic.error.code}: ${diagnostic.error.message}`);
        if (diagnostic.type === 'storage' && diagnostic.status.state !== 'ok') problems.push(`status ${diagnostic.status.state}`);
      },
    });
    await persistence.open();
    persistence.track(turnId, () => ({ conversationId: 'bench', status: 'streaming', createdAt: 0 }));
    t0 = performance.now();
    // As a stream delivers them: a network read's worth of events per task, at the
    // producer's pace when one is set.
    const interval = config.paceEventsPerSecond === undefined ? 0 : (config.eventsPerTask / config.paceEventsPerSecond) * 1000;
    for (let first = 0, batch = 0; first < events.length; first += config.eventsPerTask, batch++) {
      const end = Math.min(events.length, first + config.eventsPerTask);
      for (let i = first; i < end; i++) persistence.append(turnId, events[i] as TurnEvent);
      const due = t0 + (batch + 1) * interval;
      await (interval === 0 ? nextTask() : new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now()))));
    }
    await persistence.flush();
  }
  const t1 = performance.now();
  const stored = await store.loadTurn(turnId);
  if (stored?.events.length !== config.events) throw new Error(`stored ${stored?.events.length ?? 0} events, expected ${config.events}`);
  store.close();
  return { events: config.events, ms: t1 - t0, ...windowStats(t0, t1), problems };
}

async function main(): Promise<void> {
  const step = Number(new URLSearchParams(location.search).get('step') ?? '0');
  let next: { next?: string } = {};
  try {
    const config = (await (await fetch(`/step/${step}`)).json()) as StepConfig;
    const figures = config.kind === 'setup' ? await setup(config) : config.kind === 'hydrate' ? await hydrate(config) : await append(config);
    next = (await (await fetch(`/result/${step}`, { method: 'POST', body: JSON.stringify(figures) })).json()) as { next?: string };
  } catch (error) {
    const message = error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
    await fetch(`/result/${step}`, { method: 'POST', body: JSON.stringify({ error: message }) });
  }
  if (next.next !== undefined) location.assign(next.next);
}

void main();
