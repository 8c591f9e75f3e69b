/**
 * The rule every store applies, inside the transaction of each write, to a turn's row:
 * rows only move forward. Tabs of one origin share one database and may follow the same
 * turn; the tab that sees `turn.end` first folds it (deletes its chunks, writes the whole
 * text) while another is still appending. Without this rule that late append turns the
 * folded row back into an unfinished one holding only the late chunks: a hole from seq 1
 * on the next load, and a finished turn followed again. Chunks follow the same rule.
 */
import type { EventChunk, TurnRecord } from './store.js';

/** What a write decides on of the row already stored. */
export type StoredRow = Pick<TurnRecord, 'lastSeq' | 'text'>;

/**
 * The row an append or row write stores over `stored`, or `undefined` when the write is
 * dropped: a folded row's text is final, so late events of an ended turn add nothing
 * (not an error). Else the incoming row, with `lastSeq` never below the stored one.
 * An unfolded row with an ended status is not final: a revived turn writes past it.
 */
export function nextRow(stored: StoredRow | undefined, incoming: TurnRecord): TurnRecord | undefined {
  if (stored === undefined) return incoming;
  if (stored.text !== undefined) return undefined;
  return incoming.lastSeq >= stored.lastSeq ? incoming : { ...incoming, lastSeq: stored.lastSeq };
}

/** A fold replaces any unfolded row, and a fold that got at least as far; never one that got further. */
export function foldWins(stored: StoredRow | undefined, fold: TurnRecord): boolean {
  return stored?.text === undefined || fold.lastSeq >= stored.lastSeq;
}

/**
 * Whether a chunk is written over what is stored under its key `[turnId, firstSeq]`:
 * not over a chunk that reaches as far. Two tabs cut their flushes at different seqs;
 * a shorter chunk written last would otherwise replace a longer one and leave a hole.
 */
export function chunkWins(stored: unknown, chunk: EventChunk): boolean {
  const reach = storedRow(stored)?.lastSeq;
  return reach === undefined || reach < chunk.lastSeq;
}

/** The part of a raw stored row (or chunk) {@link nextRow} needs; `undefined` when absent or unreadable (then it is overwritten). */
export function storedRow(value: unknown): StoredRow | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { lastSeq, text } = value as Record<string, unknown>;
  if (typeof lastSeq !== 'number' || !Number.isSafeInteger(lastSeq)) return undefined;
  return typeof text === 'string' ? { lastSeq, text } : { lastSeq };
}
