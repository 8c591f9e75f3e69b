import type { ErrorBody, ServerErrorCode } from '../../protocol/schemas.js';

/** Headers every JSON answer carries: these are per-user, per-moment answers, never cacheable. */
const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

/** A JSON answer. */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

/** An error answer with the protocol's body `{"error":{"code","message"}}`. */
export function errorResponse(
  status: number,
  code: ServerErrorCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  const body: ErrorBody = { error: { code, message } };
  return jsonResponse(status, body, headers);
}

/** A failure inside request handling that maps to a documented error answer. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ServerErrorCode;
  readonly headers: Record<string, string>;
  constructor(status: number, code: ServerErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }

  toResponse(): Response {
    return errorResponse(this.status, this.code, this.message, this.headers);
  }
}
