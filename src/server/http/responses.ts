import type { ErrorBody, ServerErrorCode } from '../../protocol/schemas.js';

/** Headers every JSON answer carries: these are per-user, per-moment answers, never cacheable. */
export const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

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

/**
 * `404 not_found` for a path no route matches. The handler answers it with a hint naming its
 * base path and the path it was asked for: a mounted handler whose `basePath` differs from its
 * route's URL (or from the client's `baseUrl`) answers nothing but this, so the hint is what
 * tells the mismatch apart from a typo. Every such 404 looks alike, operator routes included
 * (docs/protocol.md section 11: their existence leaks nothing).
 */
export class RouteNotFound extends HttpError {
  constructor() {
    super(404, 'not_found', 'No such route.');
  }

  /** The answer with the hint: what was asked for and where this handler's routes are. */
  toHintedResponse(basePath: string, path: string): Response {
    const base = basePath === '' ? 'at the root (basePath "")' : `below ${basePath} (basePath "${basePath}")`;
    return errorResponse(
      404,
      'not_found',
      `No such route: ${path}. This handler serves ${base}, e.g. ${basePath}/conversations/{id}/messages and ${basePath}/turns/{id}/events; ` +
        "the handler's basePath must be the URL it is mounted at, and the client's baseUrl must end in it.",
    );
  }
}
