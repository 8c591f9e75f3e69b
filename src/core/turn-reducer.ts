/**
 * The pure heart of a followed turn: `(state, event) → state` over the protocol's
 * {@link TurnEvent}s. No platform, no I/O. Each seq is applied exactly once and in order:
 * {@link classifyEvent} says what an incoming event is (next in line, duplicate, gap, …)
 * and {@link applyEvent} applies it only when it is next in line.
 */
import type { ActionEvent, JsonValue, TurnEndEvent, TurnEvent } from '../protocol/schemas.js';
import type { ActionState } from '../storage/store.js';

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

/** What an incoming event is relative to a state. */
export type EventVerdict =
  /** seq = lastSeq + 1: apply it. */
  | 'next'
  /** seq ≤ lastSeq: already applied, drop. */
  | 'duplicate'
  /** seq > lastSeq + 1: events are missing; fetch them before applying this one. */
  | 'gap'
  /** The event names another turn. */
  | 'foreign'
  /** The turn already ended; nothing may follow `turn.end`. */
  | 'after-end'
  /** Applying it would take the text over the length cap. */
  | 'too-large';

/** Caps applied while classifying. */
export interface ReducerLimits {
  /** Largest text of one turn, UTF-16 code units. */
  maxTextLength: number;
}

const NO_LIMITS: ReducerLimits = { maxTextLength: Number.POSITIVE_INFINITY };

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

/**
 * The next state. Every state is built by this one literal so all share one hidden
 * class: V8 keeps the per-event allocation cheap (object spread over optional keys
 * would not).
 */
function next(state: TurnState, changes: Partial<TurnState>): TurnState {
  return {
    turnId: state.turnId,
    lastSeq: changes.lastSeq ?? state.lastSeq,
    phase: changes.phase ?? state.phase,
    conversationId: changes.conversationId ?? state.conversationId,
    messageId: changes.messageId ?? state.messageId,
    createdAt: changes.createdAt ?? state.createdAt,
    textLength: changes.textLength ?? state.textLength,
    actions: changes.actions ?? state.actions,
    end: changes.end ?? state.end,
    parts: changes.parts ?? state.parts,
    partCount: changes.partCount ?? state.partCount,
  };
}

/** Says what `event` is relative to `state`; never throws. */
export function classifyEvent(state: TurnState, event: TurnEvent, limits: ReducerLimits = NO_LIMITS): EventVerdict {
  if (event.turnId !== state.turnId) return 'foreign';
  if (event.seq <= state.lastSeq) return 'duplicate';
  if (state.phase === 'ended') return 'after-end';
  if (event.seq !== state.lastSeq + 1) return 'gap';
  if (event.type === 'delta' && state.textLength + event.text.length > limits.maxTextLength) return 'too-large';
  return 'next';
}

/**
 * Applies `event` when it is next in line; returns `state` itself (same object) for
 * anything else, so callers can compare identities.
 */
export function applyEvent(state: TurnState, event: TurnEvent, limits: ReducerLimits = NO_LIMITS): TurnState {
  if (classifyEvent(state, event, limits) !== 'next') return state;
  return applyNext(state, event);
}

/**
 * Applies an event already classified `next` by {@link classifyEvent} (the follower
 * classifies first to report duplicates and gaps; this spares the second check).
 */
export function applyNext(state: TurnState, event: TurnEvent): TurnState {
  switch (event.type) {
    case 'turn.start':
      return next(state, {
        lastSeq: event.seq,
        phase: 'streaming',
        conversationId: event.conversationId,
        messageId: event.messageId,
        createdAt: event.createdAt,
      });
    case 'delta': {
      if (event.text.length === 0) return next(state, { lastSeq: event.seq, phase: 'streaming' });
      return next(state, {
        lastSeq: event.seq,
        phase: 'streaming',
        parts: appendPart(state, event.text),
        partCount: state.partCount + 1,
        textLength: state.textLength + event.text.length,
      });
    }
    case 'action':
      return next(state, { lastSeq: event.seq, phase: 'streaming', actions: upsertAction(state.actions, event) });
    case 'turn.end':
      return next(state, { lastSeq: event.seq, phase: 'ended', end: event });
  }
}

/**
 * Consumes `seq` without changing anything else: an event of a type this client does not
 * know (forward compatibility) still takes its place in the log. Same state when `seq` is
 * not next.
 */
export function skipEvent(state: TurnState, seq: number): TurnState {
  if (state.phase === 'ended' || seq !== state.lastSeq + 1) return state;
  return next(state, { lastSeq: seq });
}

/** Appends to the shared parts when this state owns their tail; copies on a fork. */
function appendPart(state: TurnState, text: string): readonly string[] {
  const shared = state.parts as string[];
  if (shared.length === state.partCount) {
    shared.push(text);
    return shared;
  }
  const forked = shared.slice(0, state.partCount);
  forked.push(text);
  return forked;
}

function upsertAction(actions: readonly ActionState[], event: ActionEvent): readonly ActionState[] {
  const index = actions.findIndex((action) => action.callId === event.callId);
  const previous = index === -1 ? undefined : actions[index];
  const next: ActionState = { callId: event.callId, name: event.name, status: event.status, seq: event.seq };
  // A later event may omit what an earlier one said (`completed` without `input`): keep it.
  copyJson(next, 'input', event.input ?? previous?.input);
  copyJson(next, 'output', event.output ?? previous?.output);
  copyJson(next, 'error', event.error ?? previous?.error);
  if (index === -1) return [...actions, next];
  const copy = actions.slice();
  copy[index] = next;
  return copy;
}

function copyJson(target: ActionState, key: 'input' | 'output' | 'error', value: JsonValue | undefined): void {
  if (value !== undefined) target[key] = value;
}

/** Joined text per shared parts array, for the newest part count read so far. */
const joined = new WeakMap<readonly string[], { count: number; text: string }>();

/**
 * The assistant text of `state`. Joined lazily and cached per shared parts array, so
 * reading after every few events costs only the new parts.
 */
export function turnText(state: TurnState): string {
  const { parts, partCount } = state;
  if (partCount === 0) return '';
  const cached = joined.get(parts);
  if (cached !== undefined && cached.count === partCount) return cached.text;
  let text: string;
  if (cached !== undefined && cached.count < partCount) {
    text = cached.text + parts.slice(cached.count, partCount).join('');
  } else if (cached !== undefined) {
    // An older state read after a newer one: answer without disturbing the newest cache.
    return parts.slice(0, partCount).join('');
  } else {
    text = parts.slice(0, partCount).join('');
  }
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
export function foldedTurnState(turnId: string, folded: FoldedTurnState): TurnState {
  return next(initialTurnState(turnId), {
    lastSeq: folded.lastSeq,
    phase: 'ended',
    conversationId: folded.conversationId,
    messageId: folded.messageId,
    textLength: folded.text.length,
    actions: folded.actions,
    parts: folded.text === '' ? [] : [folded.text],
    partCount: folded.text === '' ? 0 : 1,
  });
}
