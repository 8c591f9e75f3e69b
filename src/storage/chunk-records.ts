/**
 * How the IndexedDB store keeps a chunk record (schema version 2). A run of plain text
 * deltas (`{ turnId, seq, type: 'delta', text }`, nearly every event of a turn, exactly
 * as the decoders make them; or all with one `partId`, as the AI SDK agent logs a text
 * part) is stored as its texts alone, the part once: `put()` clones each record on
 * the main thread, and an array of strings clones several times faster than as many
 * objects of four keys each (the key names and the turn id are written again for every
 * event). Any other chunk keeps its events. Version 1 records (events) stay readable.
 */
import type { DeltaEvent, LoggedEvent } from '../protocol/schemas.js';
import type { EventChunk } from './store.js';

/** A stored run of plain text deltas of `turnId`, seqs `firstSeq..lastSeq`, one text each, all of part `partId` when given. */
export interface TextRunChunk {
  turnId: string;
  firstSeq: number;
  lastSeq: number;
  partId?: string;
  texts: string[];
}

/** What object store `chunks` holds. */
export type StoredChunk = EventChunk | TextRunChunk;

/** The record stored for `chunk`: its texts when every event is a plain delta of its turn at its seq, all of one part or none, else the chunk itself. */
export function storedChunk(chunk: EventChunk): StoredChunk {
  const { turnId, firstSeq, lastSeq, events } = chunk;
  const partId = (events[0] as DeltaEvent | undefined)?.partId;
  // The keys a plain delta has: turnId, seq, type, text, and the run's partId if it has one.
  const keys = partId === undefined ? 4 : 5;
  const texts: string[] = [];
  for (let i = 0; i < events.length; i++) {
    // Exactly the decoders' plain delta at the seq the text stands for: nothing else is dropped (a value that cannot be cloned still fails the write).
    const event = events[i] as DeltaEvent;
    const { type, seq, text } = event;
    const plain = type === 'delta' && event.turnId === turnId && typeof text === 'string' && event.partId === partId && Object.keys(event).length === keys;
    if (!plain || seq !== firstSeq + i) return chunk;
    texts.push(text);
  }
  return typeof partId === 'string' ? { turnId, firstSeq, lastSeq, partId, texts } : { turnId, firstSeq, lastSeq, texts };
}

/**
 * A record as read back, with a text run turned into the events it stands for (to be
 * checked by `chunkSchema` like any chunk); anything else as it is.
 */
export function chunkWithEvents(raw: unknown): unknown {
  const record = raw as Partial<TextRunChunk> & { events?: unknown };
  if (typeof record !== 'object' || !record || record.events !== undefined || !Array.isArray(record.texts)) return raw;
  const { turnId, firstSeq, lastSeq, partId, texts } = record;
  if (typeof firstSeq !== 'number') return raw;
  const events = texts.map(
    (text: unknown, i): LoggedEvent => (partId === undefined ? { turnId, seq: firstSeq + i, type: 'delta', text } : { turnId, seq: firstSeq + i, type: 'delta', text, partId }) as DeltaEvent,
  );
  return { turnId, firstSeq, lastSeq, events };
}
