/**
 * The pure heart of a followed turn: `(state, event) → state` over the protocol's
 * {@link TurnEvent}s. No platform, no I/O. Each seq is applied exactly once and in order:
 * {@link classifyEvent} says what an incoming event is (next in line, duplicate, gap, …)
 * and {@link applyEvent} applies it only when it is next in line.
 */
import type { TurnEndEvent, TurnEvent } from '../protocol/schemas.js';
import type { ActionState } from './domain.js';

/** Where a turn is, as far as its applied events tell. */
export type TurnPhase = 'pending' | 'streaming' | 'ended';

/**
 * Immutable state of one turn. States share an append-only array of text parts: a new
 * state only records how many parts it sees, so applying a delta is O(1) and never
 * concatenates strings (per-token `+=` is quadratic once V8 flattens the rope to render).
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
  /** Shared append-only parts; only the first `partCount` belong to this state. */
  readonly parts: readonly string[];
  readonly partCount: number;
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
    parts: [],
    partCount: 0,
  };
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
  let { conversationId, messageId, createdAt, textLength, actions, end, parts, partCount } = state;
  let phase: TurnPhase = 'streaming';
  if (event.type === 'turn.start') ({ conversationId, messageId, createdAt } = event);
  else if (event.type === 'delta') {
    if (event.text) {
      // Appends to the shared parts when this state owns their tail; copies on a fork.
      if (parts.length !== partCount) parts = parts.slice(0, partCount);
      (parts as string[]).push(event.text);
      partCount++;
      textLength += event.text.length;
    }
  } else if (event.type === 'action') {
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
  return { turnId: state.turnId, lastSeq: event.seq, phase, conversationId, messageId, createdAt, textLength, actions, end, parts, partCount };
}

/**
 * Consumes `seq` without changing anything else: an event of a type this client does not
 * know (forward compatibility) still takes its place in the log. Same state when `seq` is
 * not next.
 */
export function skipEvent(state: TurnState, seq: number): TurnState {
  return state.phase === 'ended' || seq !== state.lastSeq + 1 ? state : { ...state, lastSeq: seq };
}

/** Joined text per shared parts array, for the newest part count read so far. */
const joined = new WeakMap<readonly string[], { count: number; text: string }>();

/**
 * The assistant text of `state`. Joined lazily and cached per shared parts array, so
 * reading after every few events costs only the new parts.
 */
export function turnText({ parts, partCount }: TurnState): string {
  const cached = joined.get(parts) ?? { count: 0, text: '' };
  // An older state read after a newer one: answer without disturbing the newest cache.
  if (cached.count > partCount) return parts.slice(0, partCount).join('');
  const text = cached.text + parts.slice(cached.count, partCount).join('');
  joined.set(parts, { count: partCount, text });
  return text;
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
  conversationId?: string;
  messageId?: string;
}

/** The state of an ended turn restored from its folded record (its events are gone). */
export function foldedTurnState(turnId: string, { lastSeq, text, actions, conversationId, messageId }: FoldedTurnState): TurnState {
  return {
    ...initialTurnState(turnId),
    lastSeq,
    phase: 'ended',
    conversationId,
    messageId,
    textLength: text.length,
    actions,
    parts: [text],
    partCount: 1,
  };
}
