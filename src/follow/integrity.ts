/**
 * The proof at `turn.end` (docs/protocol.md section 2): the client's text has the length and
 * SHA-256 the server logged, or the turn is rebuilt from a full replay.
 */
import { sha256Hex } from '../protocol/integrity.js';

/** What checking a text against `turn.end` found. */
export interface IntegrityVerdict {
  matches: boolean;
  /** No Web Crypto (a page on plain HTTP): only the length was compared. */
  unchecked: boolean;
}

/** Compares `text` with the logged length, then (when Web Crypto exists) the hash. Never rejects. */
export async function verifyText(text: string, end: { textLength: number; textSha256: string }): Promise<IntegrityVerdict> {
  if (text.length !== end.textLength) return { matches: false, unchecked: false };
  return sha256Hex(text).then(
    (hash) => ({ matches: hash === end.textSha256, unchecked: false }),
    // Browsers hide Web Crypto outside secure contexts: the length matched, the hash is unknown.
    () => ({ matches: true, unchecked: true }),
  );
}
