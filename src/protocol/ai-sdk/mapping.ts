/**
 * How a turn carries one AI SDK assistant message (docs/protocol.md §9), both ways, shared by
 * the server's `uiMessageAgent` and the client's `ChatTransport`. Pure: no I/O, and only
 * types from `ai`, so the client bundle holds none of its code.
 *
 * Logging: a `text-delta` of the text part deltas currently go to (the last `text-start`
 * not yet ended) is a `delta`; every other chunk is a `part`, as produced (a `text-delta`
 * of another text part too, so interleaved text parts survive), except that `start`
 * carries the turn id and transient data chunks are not logged at all.
 *
 * Replaying: the inverse, plus what a log from a server that knows nothing of the AI SDK
 * lacks: a `start` chunk, text parts around deltas with no text part open (one implicit
 * part per run of such deltas, as the core's reducer reads them) and the final `finish`,
 * `error` or `abort` from `turn.end`.
 */
import type { UIMessageChunk } from 'ai';
import type { JsonValue, PartObject, TurnEndStatus } from '../schemas.js';
import type { MessagePart, TextPart } from '../../core/turn-reducer.js';

/** What one chunk becomes in the turn's log; `undefined` for a chunk that is not logged (transient data). */
export type LoggedChunk = { type: 'delta'; text: string } | { type: 'part'; part: PartObject } | undefined;

/** A chunk as plain data: the mapping keeps whatever members it has (newer AI SDK versions add chunk types). */
type Loose = PartObject & { id?: JsonValue; delta?: JsonValue; transient?: JsonValue };

/**
 * Returns the logger of one turn's chunk stream: call it once per chunk, in order.
 *
 * @example
 * const log = createChunkLogger(turnId);
 * for await (const chunk of stream) { const event = log(chunk); if (event) yield event; }
 */
export function createChunkLogger(turnId: string): (chunk: UIMessageChunk) => LoggedChunk {
  let open: JsonValue | undefined;
  return (chunk) => {
    const part = chunk as unknown as Loose;
    switch (part.type) {
      case 'text-delta':
        // Only the bare chunk of the open part: metadata would be lost on a delta.
        if (part.id === open && open !== undefined && typeof part.delta === 'string' && part['providerMetadata'] == null) return { type: 'delta', text: part.delta };
        break;
      case 'text-start':
        open = part.id;
        break;
      case 'text-end':
        if (part.id === open) open = undefined;
        break;
      case 'start':
        return { type: 'part', part: { ...part, messageId: turnId } };
      default:
        if (part.transient === true && part.type.startsWith('data-')) return undefined;
    }
    return { type: 'part', part };
  };
}

/** How a turn ended, as the replayer needs it. */
export interface TurnEnding {
  status: TurnEndStatus;
  /** `turn.end.error` (a failed turn): its `message` becomes the `error` chunk's text. */
  error?: JsonValue | undefined;
}

/** Rebuilds a turn's chunk stream from its events (or its snapshot's parts) for one consumer. */
export interface ChunkReplayer {
  delta(text: string): void;
  part(part: PartObject): void;
  /** The snapshot's parts so far, as chunks (deltas of a text part arrive as one). */
  parts(parts: readonly MessagePart[]): void;
  end(ending: TurnEnding): void;
}

const ENDINGS = ['finish', 'error', 'abort'];

/** Creates a replayer of turn `turnId` that hands every chunk to `emit`, in order. */
export function createChunkReplayer(turnId: string, emit: (chunk: UIMessageChunk) => void): ChunkReplayer {
  let started = false;
  let ended = false;
  /** The explicit text part deltas go to. */
  let open: JsonValue | undefined;
  /** The implicit text part deltas go to. */
  let implicit: string | undefined;
  let implicitCount = 0;
  const send = (part: PartObject): void => emit(part as unknown as UIMessageChunk);
  const begin = (): void => {
    if (!started) send({ type: 'start', messageId: turnId });
    started = true;
  };
  const closeImplicit = (): void => {
    if (implicit !== undefined) send({ type: 'text-end', id: implicit });
    implicit = undefined;
  };
  const replayer: ChunkReplayer = {
    delta(text) {
      if (open === undefined) {
        if (!text) return;
        begin();
        if (implicit === undefined) send({ type: 'text-start', id: (implicit = `${turnId}-text-${implicitCount++}`) });
      }
      send({ type: 'text-delta', id: (open ?? implicit)!, delta: text });
    },
    part(part) {
      closeImplicit();
      if (part.type === 'start') {
        started = true;
        return send({ ...part, messageId: turnId });
      }
      begin();
      if (part.type === 'text-start') open = part['id'];
      else if (part.type === 'text-end' && part['id'] === open) open = undefined;
      if (ENDINGS.includes(part.type)) ended = true;
      send(part);
    },
    parts(parts) {
      // A text part's end is folded into it, but a text-delta of that part logged as a part
      // (interleaved text parts) may come later: its end then waits until after that delta.
      const lastDelta = new Map<unknown, number>();
      parts.forEach((part, i) => part.type === 'text-delta' && lastDelta.set(part['id'], i));
      const later = new Map<number, PartObject>();
      parts.forEach((part, i) => {
        if (part.type !== 'text') replayer.part(part as PartObject);
        else {
          const { text, start, end } = part as TextPart;
          if (start) replayer.part(start);
          if (text) replayer.delta(text);
          const at = end && (lastDelta.get(end['id']) ?? -1);
          if (end && at! > i) later.set(at!, end);
          else if (end) replayer.part(end);
        }
        const end = later.get(i);
        if (end) replayer.part(end);
      });
    },
    end({ status, error }) {
      closeImplicit();
      begin();
      if (ended) return;
      ended = true;
      if (status === 'complete') send({ type: 'finish' });
      else if (status === 'cancelled') send({ type: 'abort' });
      else {
        const message = error !== null && typeof error === 'object' && !Array.isArray(error) ? error['message'] : undefined;
        send({ type: 'error', errorText: typeof message === 'string' ? message : 'The turn failed.' });
      }
    },
  };
  return replayer;
}
