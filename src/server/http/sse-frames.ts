/**
 * SSE frames of logged events, encoded once: one frame for a single event, one shared
 * buffer for a page of them (every follower at that point writes the same bytes or a view
 * of their tail). Used by the turn's feed (turn-feed.ts) and the follow answer.
 */
import type { TurnEvent } from '../../protocol/schemas.js';

const encoder = new TextEncoder();

/** One SSE message for a logged event, as text: `id` = seq, `event` = type, one line of JSON data. */
export function sseText(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** One SSE message for a logged event, encoded. */
export function sseFrame(event: TurnEvent): Uint8Array {
  return encoder.encode(sseText(event));
}

/**
 * The frames of consecutive events as one read of the log brought them, encoded into one
 * buffer: every follower at that point is written the same bytes (or a view of their tail).
 */
export interface Batch {
  /** Seq of the first frame. */
  first: number;
  bytes: Uint8Array;
  /** End offset of each frame in `bytes`. */
  ends: number[];
}

/** The frames' text encoded once; where each frame ends is known from the text when it is all ASCII, as it nearly always is. */
export function batchOf(texts: string[], first: number): Batch {
  const ends: number[] = [];
  let total = 0;
  for (const text of texts) ends.push((total += text.length));
  const bytes = encoder.encode(texts.length === 1 ? (texts[0] as string) : texts.join(''));
  if (bytes.byteLength === total) return { first, bytes, ends };
  // Some character took more than one byte: frame by frame.
  const frames = texts.map((text) => encoder.encode(text));
  const joined = new Uint8Array(bytes.byteLength);
  let at = 0;
  for (let i = 0; i < frames.length; i++) {
    joined.set(frames[i] as Uint8Array, at);
    ends[i] = at += (frames[i] as Uint8Array).byteLength;
  }
  return { first, bytes: joined, ends };
}
