/**
 * The client's randomness: backoff jitter and the ids it mints (operation ids, lease
 * owners). A seeded simulator supplies both, so a run repeats exactly.
 */
import { customRandom, nanoid, urlAlphabet } from 'nanoid';

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** A fresh 21-character URL-safe id (nanoid's alphabet: a valid protocol id). */
  id(): string;
}

/** `Math.random` and nanoid (crypto-strong ids). */
export const realRandom: Random = { next: () => Math.random(), id: () => nanoid() };

/** {@link Random} over a seeded generator `next` (uniform in [0, 1)): for simulators and tests. */
export function seededRandom(next: () => number): Random {
  const id = customRandom(urlAlphabet, 21, (size) => Uint8Array.from({ length: size }, () => Math.floor(next() * 256)));
  return { next, id };
}
