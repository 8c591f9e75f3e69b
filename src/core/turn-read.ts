/**
 * Reading a turn's state (`turn-reducer.ts`): its message parts in order, as the snapshot
 * and a folded row show them (the text itself is the reducer's `turnText`).
 */
import type { JsonObject, PartObject } from '../protocol/schemas.js';
import type { PartEntry } from './domain.js';
import { turnText, type TurnState } from './turn-reducer.js';

/** A text part of the message as {@link turnParts} shows it: its deltas joined. */
export interface TextPart {
  readonly type: 'text';
  readonly text: string;
  /** The `text-start` part that opened it; absent for implicit text (deltas with no part open). */
  readonly start?: PartObject;
  /** The `text-end` part that closed it, once applied. */
  readonly end?: PartObject;
  /** The `providerMetadata` of its last delta that carried one. */
  readonly providerMetadata?: JsonObject;
}

/** One part of the assistant's message: text, or a `part` event's part exactly as sent. */
export type MessagePart = TextPart | PartObject;

/**
 * The message's parts in order: each text part with its deltas joined (`text-start` and
 * `text-end` fold into it), every other part as sent. A `text-end` naming no open text
 * part stays a part of its own. O(parts), called once per snapshot.
 */
export function turnParts(state: TurnState): MessagePart[] {
  const text = turnText(state);
  const result: MessagePart[] = [];
  const open = new Map<unknown, number>();
  /** Entry index → index in `result`, for the entries that open a text part. */
  const placed = new Map<number, number>();
  // The text part being filled: its index in `result` and where its run of text starts.
  let current = -1;
  let from = 0;
  const close = (to: number): void => {
    if (current >= 0 && to > from) {
      const part = result[current] as TextPart;
      result[current] = { ...part, text: part.text + text.slice(from, to) };
    }
  };
  for (let i = 0; i < state.partCount; i++) {
    const { at, part, into, providerMetadata } = state.parts[i]!;
    if (into !== undefined) {
      close(at);
      current = placed.get(into) ?? -1;
      from = at;
      if (providerMetadata && current >= 0) result[current] = { ...(result[current] as TextPart), providerMetadata };
    } else if (!part || part.type === 'text-start') {
      close(at);
      current = result.length;
      from = at;
      placed.set(i, current);
      result.push(part ? { type: 'text', text: '', start: part } : { type: 'text', text: '', ...(providerMetadata && { providerMetadata }) });
      if (part) open.set(part.id, current);
    } else {
      const index = part.type === 'text-end' ? open.get(part.id) : undefined;
      if (index === undefined) result.push(part);
      else {
        open.delete(part.id);
        result[index] = { ...(result[index] as TextPart), end: part };
      }
    }
  }
  close(state.textLength);
  return result;
}

/** The message entries of `state`, as a folded row keeps them. */
export function turnEntries(state: TurnState): PartEntry[] {
  return state.parts.slice(0, state.partCount);
}
