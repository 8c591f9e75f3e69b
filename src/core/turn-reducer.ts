/**
 * The pure heart of a followed turn: `(state, event) → state` over the protocol's
 * {@link TurnEvent}s. No platform, no I/O. Each seq is applied exactly once and in order:
 * {@link classifyEvent} says what an incoming event is (next in line, duplicate, gap, …)
 * and {@link applyEvent} applies it only when it is next in line.
 */
import type { DeltaEvent, JsonObject, PartObject, TurnEndEvent, TurnEvent } from '../protocol/schemas.js';
import type { ActionState, PartEntry } from './domain.js';

/** Where a turn is, as far as its applied events tell. */
export type TurnPhase = 'pending' | 'streaming' | 'ended';

/**
 * The turn's text, shared by the states of one line of history: an append-only list of
 * chunks (the deltas' texts), compacted into `flat` whenever the newest text is read. A
 * delta is then O(1) and never concatenates strings (per-token `+=` is quadratic once V8
 * flattens the rope to render), and a read text is held once, not also as its chunks.
 */
export interface TextChunks {
  /** The first `flatCount` chunks, joined. */
  flat: string;
  flatCount: number;
  /** Chunks `flatCount …` not yet joined. */
  tail: string[];
  /** Chunks appended so far (`flatCount + tail.length`). */
  count: number;
}

/**
 * Immutable state of one turn. States share their append-only chunks and part entries: a
 * new state only records how many of each it sees, so applying an event is O(1). Applying
 * to an older state (a fork) copies instead.
 */
export interface TurnState {
  readonly turnId: string;
  /** seq of the last applied event; 0 before any. */
  readonly lastSeq: number;
  readonly phase: TurnPhase;
  readonly conversationId: string | undefined;
  readonly messageId: string | undefined;
  readonly createdAt: string | undefined;
  /** Length of the text in UTF-16 code units (what `turn.end.textLength` counts). */
  readonly textLength: number;
  /** Actions by first appearance, each at its latest state. */
  readonly actions: readonly ActionState[];
  /** The `turn.end` event once applied. */
  readonly end: TurnEndEvent | undefined;
  /** Shared text chunks; only the first `chunkCount` belong to this state. */
  readonly chunks: TextChunks;
  readonly chunkCount: number;
  /** Shared message entries, in order; only the first `partCount` belong to this state. */
  readonly parts: readonly PartEntry[];
  readonly partCount: number;
  /**
   * Index of the entry that opened the text part deltas go to (a delta naming no part, or
   * the part being filled); -1 when none is open (the next such delta opens an implicit one).
   */
  readonly openText: number;
}

/**
 * What an incoming event is relative to a state: `next` (seq = lastSeq + 1: apply it),
 * `duplicate` (seq ≤ lastSeq: drop), `gap` (events are missing: fetch them first),
 * `foreign` (another turn's), `after-end` (nothing may follow `turn.end`), `too-large`
 * (the text would pass its cap).
 */
export type EventVerdict = 'next' | 'duplicate' | 'gap' | 'foreign' | 'after-end' | 'too-large';

/** Caps applied while classifying (the client's `limits` option). */
export interface ReducerLimits {
  /** Largest text of one turn, UTF-16 code units. Default 16 Mi. */
  maxTurnTextLength?: number | undefined;
}

/** A fresh state for `turnId` with nothing applied. */
export function initialTurnState(turnId: string): TurnState {
  return {
    turnId,
    lastSeq: 0,
    phase: 'pending',
    conversationId: undefined,
    messageId: undefined,
    createdAt: undefined,
    textLength: 0,
    actions: [],
    end: undefined,
    chunks: newChunks(''),
    chunkCount: 0,
    parts: [],
    partCount: 0,
    openText: -1,
  };
}

function newChunks(flat: string): TextChunks {
  return { flat, flatCount: 0, tail: [], count: 0 };
}

/** `list` with `item` appended at `count`: in place when this state owns the list's tail, else a copy (a fork). */
function append<T>(list: readonly T[], count: number, item: T): T[] {
  const owned = (list.length === count ? list : list.slice(0, count)) as T[];
  owned.push(item);
  return owned;
}

/** Says what `event` is relative to `state`; never throws. */
export function classifyEvent(state: TurnState, event: TurnEvent, limits?: ReducerLimits): EventVerdict {
  if (event.turnId !== state.turnId) return 'foreign';
  if (event.seq <= state.lastSeq) return 'duplicate';
  if (state.phase === 'ended') return 'after-end';
  if (event.seq > state.lastSeq + 1) return 'gap';
  if (event.type === 'delta' && state.textLength + event.text.length > (limits?.maxTurnTextLength ?? 16 * 1024 * 1024)) return 'too-large';
  return 'next';
}

/** Applies `event` when it is next in line; returns `state` itself (same object) for anything else. */
export function applyEvent(state: TurnState, event: TurnEvent, limits?: ReducerLimits): TurnState {
  return classifyEvent(state, event, limits) === 'next' ? applyNext(state, event) : state;
}

/**
 * Applies an event already classified `next` by {@link classifyEvent} (the follower
 * classifies first to report duplicates and gaps; this spares the second check).
 */
export function applyNext(state: TurnState, event: TurnEvent): TurnState {
  let { conversationId, messageId, createdAt, textLength, actions, end, chunks, chunkCount, parts, partCount, openText } = state;
  let phase: TurnPhase = 'streaming';
  if (event.type === 'delta') {
    const { text, providerMetadata } = event;
    const target = deltaTarget(state, event);
    if (target < 0 && text) {
      // A delta with no text part open starts an implicit one (a plain-text turn is one text part).
      parts = append(parts, partCount, { at: textLength, ...(providerMetadata && { providerMetadata }) });
      openText = partCount++;
    } else if (target >= 0 && (target !== openText || providerMetadata)) {
      // Back to another open part (interleaved parts), or metadata to keep: a run of its own.
      parts = append(parts, partCount++, { at: textLength, into: target, ...(providerMetadata && { providerMetadata }) });
      openText = target;
    }
    if (text) {
      // A fork (this state is not the newest of its chunks) starts its own chunks from its text.
      if (chunks.count !== chunkCount) chunks = { ...newChunks(turnText(state)), flatCount: chunkCount, count: chunkCount };
      chunks.tail.push(text);
      chunks.count = ++chunkCount;
      textLength += text.length;
    }
  } else if (event.type === 'part') {
    const { part } = event;
    const open = parts[openText]?.part;
    // text-start names the text part the following deltas go to; its text-end (same id) closes it.
    // Any other part closes implicit text, so text, a part, then text reads as three parts.
    if (part.type === 'text-start') openText = partCount;
    else if (openText >= 0 && (!open || (part.type === 'text-end' && open.id === part.id))) openText = -1;
    parts = append(parts, partCount++, { at: textLength, part });
  } else if (event.type === 'turn.start') ({ conversationId, messageId, createdAt } = event);
  else if (event.type === 'action') {
    const { turnId, type, ...fields } = event;
    const index = actions.findIndex((action) => action.callId === event.callId);
    // A later event may omit what an earlier one said (`completed` without `input`): keep it.
    const action = { ...actions[index], ...fields } as ActionState;
    actions = index < 0 ? [...actions, action] : actions.with(index, action);
  } else {
    phase = 'ended';
    end = event;
  }
  // One literal for every state: all share one hidden class, which keeps the per-event cost low.
  return { turnId: state.turnId, lastSeq: event.seq, phase, conversationId, messageId, createdAt, textLength, actions, end, chunks, chunkCount, parts, partCount, openText };
}

/**
 * The entry of the text part `delta` goes to (docs/protocol.md §9): the open part its
 * `partId` names; without a `partId`, the open text; else (a part not open) the open text
 * when it is implicit. -1: a new implicit part. A switch between parts scans back to the
 * part's `text-start` (or a run into it); the common case, the part being filled, is O(1).
 */
function deltaTarget({ parts, partCount, openText }: TurnState, { partId }: DeltaEvent): number {
  const open = openText < 0 ? undefined : parts[openText]!.part;
  if (partId === undefined || (open && open.id === partId)) return openText;
  for (let i = partCount - 1; i >= 0; i--) {
    const { part, into } = parts[i]!;
    const named = into === undefined ? part : parts[into]!.part;
    if (named?.id !== partId) continue;
    if (named.type === 'text-start') return into ?? i;
    if (named.type === 'text-end') break;
  }
  return open ? -1 : openText;
}

/**
 * Consumes `seq` without changing anything else: an event of a type this client does not
 * know (forward compatibility) still takes its place in the log. Same state when `seq` is
 * not next.
 */
export function skipEvent(state: TurnState, seq: number): TurnState {
  return state.phase === 'ended' || seq !== state.lastSeq + 1 ? state : { ...state, lastSeq: seq };
}

/**
 * The assistant text of `state`. Reading the newest state joins the chunks not yet joined
 * into one string that replaces them (the text is held once); an older state's text is a
 * prefix of it.
 */
export function turnText({ chunks, chunkCount, textLength }: TurnState): string {
  if (chunkCount === chunks.count) {
    if (chunks.tail.length) {
      chunks.flat += chunks.tail.join('');
      chunks.tail = [];
      chunks.flatCount = chunkCount;
    }
    return chunks.flat;
  }
  return textLength <= chunks.flat.length ? chunks.flat.slice(0, textLength) : chunks.flat + chunks.tail.slice(0, chunkCount - chunks.flatCount).join('');
}

/** Folds a whole log (already in seq order) into a state; events that are not next are skipped. */
export function reduceEvents(turnId: string, events: Iterable<TurnEvent>, limits?: ReducerLimits): TurnState {
  let state = initialTurnState(turnId);
  for (const event of events) state = applyEvent(state, event, limits);
  return state;
}

/** What a folded (ended) turn keeps in storage. */
export interface FoldedTurnState {
  lastSeq: number;
  text: string;
  actions: readonly ActionState[];
  /** Absent in rows older than parts: their text is one implicit text part. */
  parts?: readonly PartEntry[] | undefined;
  conversationId?: string;
  messageId?: string;
}

/** The state of an ended turn restored from its folded record (its events are gone). */
export function foldedTurnState(turnId: string, { lastSeq, text, actions, parts, conversationId, messageId }: FoldedTurnState): TurnState {
  const entries = parts ?? (text ? [{ at: 0 }] : []);
  return {
    ...initialTurnState(turnId),
    lastSeq,
    phase: 'ended',
    conversationId,
    messageId,
    textLength: text.length,
    actions,
    chunks: newChunks(text),
    parts: entries,
    partCount: entries.length,
  };
}
