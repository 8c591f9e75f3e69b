import { jsonBytes, continuedMessageId, MAX_CONTEXT_BYTES, submitBodySchema, type SubmitBody } from '../../protocol/schemas.js';
import { HttpError } from './responses.js';

/** Message content deeper than this is refused: validating it would only risk the stack. */
const MAX_CONTENT_DEPTH = 64;
const POISON_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Reads at most `max` bytes of body; `undefined` when it is larger. */
export async function readBody(request: Request, max: number): Promise<Uint8Array | undefined> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^[0-9]+$/.test(declared) && Number(declared) > max) return undefined;
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** Refuses keys that reach a prototype when copied naively, and absurd nesting. */
function checkContentShape(value: unknown, depth = 0): void {
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_CONTENT_DEPTH) throw new HttpError(400, 'invalid_body', `content is nested deeper than ${MAX_CONTENT_DEPTH} levels.`);
  if (Array.isArray(value)) {
    for (const item of value) checkContentShape(item, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    if (POISON_KEYS.has(key)) throw new HttpError(400, 'invalid_body', `content may not contain the key "${key}".`);
    checkContentShape((value as Record<string, unknown>)[key], depth + 1);
  }
}

function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const type = value.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * The submit body (section 1), checked in the order a client can act on: declared type,
 * size, UTF-8 JSON, shape, the context's own size, a continuation's message. Returns the parsed JSON too: the idempotency fingerprint is
 * taken over exactly what was sent.
 */
export async function readSubmitBody(request: Request, maxBytes: number): Promise<{ body: SubmitBody; parsed: unknown }> {
  // docs/protocol.md's submit table has no 415: a body declared as something other than JSON
  // is a malformed request (400), which also refuses cross-site form posts.
  if (!isJsonContentType(request.headers.get('content-type'))) {
    throw new HttpError(400, 'unsupported_media_type', 'Content-Type must be application/json.');
  }
  const bytes = await readBody(request, maxBytes);
  if (bytes === undefined) throw new HttpError(413, 'payload_too_large', `The body exceeds ${maxBytes} bytes.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new HttpError(400, 'invalid_json', 'The body is not valid UTF-8 JSON.');
  }
  checkContentShape(parsed);
  const body = submitBodySchema.safeParse(parsed);
  if (!body.success) throw new HttpError(400, 'invalid_body', 'The body must be {"content": <string or JSON object>, "context"?: <JSON object>}.');
  const { content, context } = body.data;
  if (context !== undefined && jsonBytes(context) > MAX_CONTEXT_BYTES) {
    throw new HttpError(413, 'context_too_large', `The context exceeds ${MAX_CONTEXT_BYTES} bytes.`);
  }
  // An assistant message is a continuation (§9): it must name the message it continues.
  if (typeof content === 'object' && content['role'] === 'assistant' && continuedMessageId(content) === undefined) {
    throw new HttpError(400, 'invalid_body', 'A continuation is an assistant UIMessage with an id and its parts.');
  }
  return { body: body.data, parsed };
}
