/**
 * How a turn carries one AI SDK assistant message (docs/protocol.md §9), both ways, shared by
 * the server's `uiMessageAgent` and the client's `ChatTransport`. Pure: no I/O, and only
 * types from `ai`, so the client bundle holds none of its code.
 *
 * Logging: every `text-delta` is a `delta` (its `id` as `partId`, its `providerMetadata`
 * kept), so every delta counts in the text and its proof; every other chunk is a `part`, as
 * produced, except that `start` carries the message id and transient data chunks are not
 * logged at all.
 *
 * Replaying: the inverse, plus what a log from a server that knows nothing of the AI SDK
 * lacks: a `start` chunk, text parts around deltas with no text part open (one implicit
 * part per run of such deltas, as the core's reducer reads them) and the final `finish`,
 * `error` or `abort` from `turn.end`. Deltas go to the part their `partId` names while it is
 * open, exactly where `core/turn-reducer.ts` places them, so interleaved parts rebuild in place.
 */
import type { UIMessageChunk } from 'ai';
import type { DeltaEvent, JsonObject, JsonValue, PartObject, TurnEndStatus } from '../schemas.js';
import type { MessagePart, TextPart } from '../../core/turn-read.js';

/** A delta as logged: the text, and the text part it belongs to with its metadata when the producer named them. */
export type LoggedDelta = Pick<DeltaEvent, 'type' | 'text' | 'partId' | 'providerMetadata'>;

/** What one chunk becomes in the turn's log; `undefined` for a chunk that is not logged (transient data). */
export type LoggedChunk = LoggedDelta | { type: 'part'; part: PartObject } | undefined;

/** A chunk as plain data: the mapping keeps whatever members it has (newer AI SDK versions add chunk types). */
type Loose = PartObject & { id?: JsonValue; delta?: JsonValue; transient?: JsonValue; providerMetadata?: JsonValue };

const isObject = (value: JsonValue | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Returns the logger of one turn's chunk stream: call it once per chunk, in order.
 * `messageId` is what the `start` chunk carries: the turn id, or for a continuation the id
 * of the message it continues (docs/protocol.md §9).
 *
 * @example
 * const log = createChunkLogger(turnId);
 * for await (const chunk of stream) { const event = log(chunk); if (event) yield event; }
 */
export function createChunkLogger(messageId: string): (chunk: UIMessageChunk) => LoggedChunk {
  return (chunk) => {
    const part = chunk as unknown as Loose;
    switch (part.type) {
      case 'text-delta': {
        const { id, delta, providerMetadata } = part;
        // A malformed text-delta stays a part, as produced, for the client to judge.
        if (typeof id !== 'string' || typeof delta !== 'string' || !(providerMetadata == null || isObject(providerMetadata))) break;
        return { type: 'delta', text: delta, partId: id, ...(providerMetadata != null && { providerMetadata }) };
      }
      case 'start':
        return { type: 'part', part: { ...part, messageId } };
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
  /** A `delta` event (or its fields): to the text part its `partId` names while open, else as the reducer places it. */
  delta(delta: Pick<DeltaEvent, 'text' | 'partId' | 'providerMetadata'>): void;
  part(part: PartObject): void;
  /** The snapshot's parts so far, as chunks (deltas of a text part arrive as one). */
  parts(parts: readonly MessagePart[]): void;
  end(ending: TurnEnding): void;
}

const ENDINGS = ['finish', 'error', 'abort'];

/** The chunk a turn's end calls for: `finish`, `abort`, or `error` with `turn.end.error`'s message. */
function endChunk(status: TurnEndStatus, error: JsonValue | undefined): PartObject {
  if (status === 'complete') return { type: 'finish' };
  if (status === 'cancelled') return { type: 'abort' };
  const message = error !== null && typeof error === 'object' && !Array.isArray(error) ? error['message'] : undefined;
  return { type: 'error', errorText: typeof message === 'string' ? message : 'The turn failed.' };
}

/**
 * A snapshot's parts through `replayer`, in order; `detach` closes any implicit text and
 * forgets the open one before an implicit text part (one of its own).
 */
function replayParts(replayer: ChunkReplayer, parts: readonly MessagePart[], detach: () => void): void {
  // A text part's end is folded into it, but a text-delta of that part logged as a part
  // (a 1.1 server's log of interleaved text parts) may come later: its end then waits
  // until after that delta.
  const lastDelta = new Map<unknown, number>();
  parts.forEach((part, i) => part.type === 'text-delta' && lastDelta.set(part['id'], i));
  const later = new Map<number, PartObject>();
  parts.forEach((part, i) => {
    if (part.type !== 'text') replayer.part(part as PartObject);
    else {
      const { text, start, end, providerMetadata } = part as TextPart;
      if (start) replayer.part(start);
      else detach();
      const partId = start && typeof start['id'] === 'string' ? start['id'] : undefined;
      if (text || providerMetadata) replayer.delta({ text, partId, providerMetadata });
      const at = end && (lastDelta.get(end['id']) ?? -1);
      if (end && at! > i) later.set(at!, end);
      else if (end) replayer.part(end);
    }
    const end = later.get(i);
    if (end) replayer.part(end);
  });
}

/**
 * Creates a replayer of turn `turnId` that hands every chunk to `emit`, in order. The
 * `start` chunk carries `messageId` when given; else the logged `start`'s own (the turn id,
 * or for a continuation the continued message's id, docs/protocol.md §9), else the turn id.
 */
export function createChunkReplayer(turnId: string, emit: (chunk: UIMessageChunk) => void, messageId?: string): ChunkReplayer {
  let started = false;
  let ended = false;
  /** Explicit text parts open: `text-start` seen, its `text-end` not yet. */
  const opened = new Set<JsonValue | undefined>();
  /** The text part a delta naming no part goes to (the reducer's open text): explicit or implicit. */
  let current: JsonValue | undefined;
  /** The implicit text part open, if any. */
  let implicit: string | undefined;
  let implicitCount = 0;
  const send = (part: PartObject): void => emit(part as unknown as UIMessageChunk);
  const begin = (): void => {
    if (!started) send({ type: 'start', messageId: messageId ?? turnId });
    started = true;
  };
  const closeImplicit = (): void => {
    if (implicit === undefined) return;
    send({ type: 'text-end', id: implicit });
    if (current === implicit) current = undefined;
    implicit = undefined;
  };
  /** Where `core/turn-reducer.ts` puts a delta: the open part it names, else the open text if implicit, else a new implicit part. */
  const target = (partId: string | undefined): JsonValue | undefined => {
    if (partId === undefined) return current;
    if (opened.has(partId)) return partId;
    return implicit !== undefined && current === implicit ? implicit : undefined;
  };
  const replayer: ChunkReplayer = {
    delta({ text, partId, providerMetadata }) {
      let id = target(partId);
      // An empty delta changes no implicit text (an explicit part's is sent, as produced).
      if (!text && !providerMetadata && (id === undefined || id === implicit)) return;
      if (id === undefined) {
        begin();
        closeImplicit();
        send({ type: 'text-start', id: (id = implicit = `${turnId}-text-${implicitCount++}`) });
      }
      current = id;
      send({ type: 'text-delta', id, delta: text, ...(providerMetadata && { providerMetadata }) });
    },
    part(part) {
      closeImplicit();
      if (part.type === 'start') {
        started = true;
        const logged = part['messageId'];
        return send({ ...part, messageId: messageId ?? (typeof logged === 'string' && logged !== '' ? logged : turnId) });
      }
      begin();
      if (part.type === 'text-start') {
        opened.add(part['id']);
        current = part['id'];
      } else if (part.type === 'text-end') {
        opened.delete(part['id']);
        if (part['id'] === current) current = undefined;
      }
      if (ENDINGS.includes(part.type)) ended = true;
      send(part);
    },
    parts: (parts) =>
      replayParts(replayer, parts, () => {
        // Implicit text is a part of its own, whatever text was open before it.
        closeImplicit();
        current = undefined;
      }),
    end({ status, error }) {
      closeImplicit();
      begin();
      if (ended) return;
      ended = true;
      send(endChunk(status, error));
    },
  };
  return replayer;
}
