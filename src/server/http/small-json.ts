import { readBody } from './submit-body.js';
import { HttpError } from './responses.js';
import type { ServerErrorCode } from '../../protocol/schemas.js';

/** Largest body of a receipt or an operator's end: a few fields, never more. */
const MAX_SMALL_BODY = 8 * 1024;

/**
 * The JSON body of a small request (a receipt, an operator's end), or `400 <code>` when it
 * is missing, too large or not UTF-8 JSON: one code per route, as docs/protocol.md names it.
 */
export async function readSmallJson(request: Request, code: ServerErrorCode): Promise<unknown> {
  const bytes = await readBody(request, MAX_SMALL_BODY);
  if (bytes === undefined) throw new HttpError(400, code, `The body exceeds ${MAX_SMALL_BODY} bytes.`);
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new HttpError(400, code, 'The body is not valid UTF-8 JSON.');
  }
}
