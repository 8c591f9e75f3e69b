/**
 * The rules every store applies, inside the transaction of each write: rows only move
 * forward. Tabs of one origin share one database and may follow the same turn; the tab
 * that sees `turn.end` first folds it (deletes its chunks, writes the whole text) while
 * another is still appending. Without these rules that late append turns the folded row
 * back into an unfinished one holding only the late chunks: a hole from seq 1 on the next
 * load, and a finished turn followed again. Loading follows one rule too: events from
 * seq 1 on, up to the first hole or bad chunk.
 */
import { chunkWithEvents } from './chunk-records.js';
import { chunkSchema, corruptRecord } from './records.js';
import type { EventChunk, LoadedTurn, TurnRecord } from './store.js';

/** What is stored under a key, as read back (unchecked). */
type Stored<T> = Partial<T> | undefined;

/**
 * The row a write stores over `stored`, or `undefined` when the write is dropped (not an
 * error). A folded row (with `text`) is final: only a fold that got at least as far
 * replaces it. A fold replaces any unfolded row. Any other row keeps the stored `lastSeq`
 * when that is higher. An unfolded row with an ended status is not final: a revived turn
 * writes past it.
 */
export function nextRow(stored: Stored<TurnRecord>, row: TurnRecord): TurnRecord | undefined {
  if (typeof stored?.text == 'string') return row.text !== undefined && !(row.lastSeq < stored.lastSeq!) ? row : undefined;
  return row.text !== undefined ? row : { ...row, lastSeq: Math.max(row.lastSeq, Number(stored?.lastSeq) || 0) };
}

/**
 * Whether a chunk is written over what is stored under its key `[turnId, firstSeq]`: not
 * over a chunk that reaches as far. Two tabs cut their flushes at different seqs; a
 * shorter chunk written last would otherwise replace a longer one and leave a hole.
 */
export function chunkWins(stored: Stored<Pick<EventChunk, 'lastSeq'>>, chunk: Pick<EventChunk, 'lastSeq'>): boolean {
  return !(stored?.lastSeq! >= chunk.lastSeq);
}

/**
 * A turn as loaded: a folded row is the whole turn; else its chunks (in firstSeq order)
 * are joined into events from seq 1 on (overlapping chunks of two tabs give each seq
 * once). A bad chunk or a hole ends the run and is reported. `lastSeq` is the last event
 * returned, so the client fetches the rest instead of continuing over a hole (the row may
 * also be ahead without corruption: a status written before the tab died with events
 * still buffered).
 */
export function joinChunks(record: TurnRecord, chunks: readonly unknown[]): LoadedTurn {
  const events: LoadedTurn['events'] = [];
  if (record.text !== undefined) return { record, events };
  for (const raw of chunks) {
    const chunk = chunkSchema.safeParse(chunkWithEvents(raw)).data;
    if (!chunk || chunk.firstSeq > events.length + 1) {
      const { turnId, firstSeq } = raw as EventChunk;
      return { record: { ...record, lastSeq: events.length }, events, skipped: [corruptRecord('chunks', [turnId, firstSeq])] };
    }
    for (const event of chunk.events) if (event.seq == events.length + 1) events.push(event);
  }
  return { record: { ...record, lastSeq: events.length }, events };
}
