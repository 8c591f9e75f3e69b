/**
 * Continuations (docs/protocol.md §9, since 1.2): when `useChat` sends with an assistant message
 * last (a client tool's output, a tool approval), that message is submitted as the content of a
 * continuation turn, under a key derived from what it answers, so every tab, retry and reload
 * that answers the same calls sends the same key (one turn; a different answer: `422`).
 */
import type { UIMessage } from 'ai';

type Part = UIMessage['parts'][number] & { toolCallId?: string; state?: string };

const isToolPart = (part: UIMessage['parts'][number]): part is Part => part.type.startsWith('tool-') || part.type === 'dynamic-tool';

/** States in which a tool call holds its answer (an output, an error, a denial, an approval decision). */
const ANSWERED = ['output-available', 'output-error', 'output-denied', 'approval-responded'];

/** The ids of the message's tool calls that hold an answer, sorted. */
export function answeredCallIds(message: UIMessage): string[] {
  const ids = message.parts.filter(isToolPart).flatMap((part) => (ANSWERED.includes(part.state ?? '') && typeof part.toolCallId === 'string' ? [part.toolCallId] : []));
  return [...new Set(ids)].sort();
}

/**
 * 128 bits of a string, as 32 hex digits: four 32-bit multiply-xor lanes over its UTF-16 code
 * units, each mixed with the others at the end. Not a cryptographic hash: the keys it makes are
 * scoped to one principal (docs/protocol.md §1), and it must be the same on every page of the
 * origin, Web Crypto or not (a page on plain HTTP has none), and synchronous.
 */
export function hash128(text: string): string {
  let a = 0x6a09e667;
  let b = 0xbb67ae85;
  let c = 0x3c6ef372;
  let d = 0xa54ff53a;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    a = b ^ Math.imul(a ^ unit, 0x9e3779b1);
    b = c ^ Math.imul(b ^ unit, 0x85ebca77);
    c = d ^ Math.imul(c ^ unit, 0xc2b2ae3d);
    d = a ^ Math.imul(d ^ unit, 0x27d4eb2f);
  }
  for (let round = 0; round < 4; round++) {
    a = Math.imul(a ^ (a >>> 16) ^ d, 0x85ebca6b);
    b = Math.imul(b ^ (b >>> 13) ^ a, 0xc2b2ae35);
    c = Math.imul(c ^ (c >>> 16) ^ b, 0x27d4eb2f);
    d = Math.imul(d ^ (d >>> 13) ^ c, 0x165667b1);
  }
  return [a, b, c, d].map((lane) => (lane >>> 0).toString(16).padStart(8, '0')).join('');
}

/**
 * The Idempotency-Key of the continuation that submits `message`: from its id and its answered
 * tool call ids (sorted), hashed into the key alphabet (`cont-` and 32 hex digits, 37 characters).
 * The answers themselves are not in it: a different answer to the same calls is the same key
 * with another body, which the server refuses (`422 idempotency_key_reused`).
 */
export function continuationKey(message: UIMessage): string {
  return `cont-${hash128([message.id, ...answeredCallIds(message)].join('\n'))}`;
}
