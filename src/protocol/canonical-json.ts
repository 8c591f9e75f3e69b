import { sha256Hex } from './integrity.js';

/**
 * JSON with object keys sorted at every depth, so two bodies that differ only in key
 * order or whitespace are the same request (the idempotency fingerprint must not
 * depend on how a client happened to serialise). The client's outbox compares bodies by it too.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The idempotency fingerprint of a submission: SHA-256 of conversation id + canonical body. */
export function submissionFingerprint(conversationId: string, body: unknown): Promise<string> {
  return sha256Hex(`${conversationId}\n${canonicalJson(body)}`);
}
