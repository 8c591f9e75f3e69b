/**
 * `useChat`'s per-request data (`sendMessage(message, { body, metadata, headers })`) as a
 * Lifeline submission carries it (docs/protocol.md §1): `body` and `metadata` become the
 * submission's `context` (`{ body, metadata }`, each only when given), the headers go as headers
 * of its submit request (in memory only, never stored: they may hold credentials).
 */
import type { JsonObject, SubmitContext } from '../protocol/schemas.js';

/** `{ body, metadata }` as plain JSON; `undefined` when neither is given. */
export function requestContext(body: object | undefined, metadata: unknown): SubmitContext | undefined {
  if (body === undefined && metadata === undefined) return undefined;
  // Plain JSON, as it will be sent and stored (a Date becomes its string, a function goes).
  return JSON.parse(JSON.stringify({ body, metadata })) as JsonObject;
}

/** Headers in any form `fetch` takes, as a plain record (names lowercased). */
export function plainHeaders(headers: Record<string, string> | Headers): Record<string, string> {
  return Object.fromEntries(new Headers(headers).entries());
}
