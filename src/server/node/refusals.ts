import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorBody, ServerErrorCode } from '../../protocol/schemas.js';

/**
 * Methods a Fetch `Request` cannot carry (the Fetch standard's forbidden methods):
 * `new Request` throws on them, so the adapter answers before building one.
 */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/** What `Allow` lists when a method can never reach a Fetch handler. */
export const FETCH_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

export function isForbiddenMethod(method: string): boolean {
  return FORBIDDEN_METHODS.has(method.toUpperCase());
}

interface Refusal {
  status: number;
  reason: string;
  code: ServerErrorCode;
  message: string;
  headers?: Record<string, string>;
}

const METHOD_REFUSAL: Refusal = {
  status: 405,
  reason: 'Method Not Allowed',
  code: 'method_not_allowed',
  message: 'This method is not served here.',
  headers: { allow: FETCH_METHODS },
};

/** Node's parser error codes → the answer a client can act on. */
function refusalFor(code: string | undefined): Refusal {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'Request Header Fields Too Large', code: 'headers_too_large', message: 'The request headers are too large.' };
    case 'HPE_INVALID_METHOD':
      return METHOD_REFUSAL;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, reason: 'Request Timeout', code: 'request_timeout', message: 'The request took too long to arrive.' };
    default:
      return { status: 400, reason: 'Bad Request', code: 'bad_request', message: 'The request is not valid HTTP.' };
  }
}

/** A whole HTTP/1.1 answer with the protocol's error body, for a socket the http module no longer answers on. */
function rawAnswer(refusal: Refusal): string {
  const body: ErrorBody = { error: { code: refusal.code, message: refusal.message } };
  const text = JSON.stringify(body);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(text)),
    connection: 'close',
    ...refusal.headers,
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\n${lines.join('')}\r\n${text}`;
}

/**
 * Node's `clientError`: the parser refused the request (bad syntax, unknown method,
 * headers over `maxHeaderSize`, a timeout). Node's own answer has an empty body; this
 * one has the protocol's typed body. A socket already answering a request, or gone,
 * is only destroyed, as Node does.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // Node keeps the response in progress on its socket; writing over it would corrupt that answer.
  const current = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || current?.headersSent === true) {
    socket.destroy();
    return;
  }
  socket.end(rawAnswer(refusalFor(error.code)));
}

/** Node's `connect` (a `CONNECT` request, which never reaches a request listener): `405` with the typed body. */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => undefined);
  socket.end(rawAnswer(METHOD_REFUSAL));
}

/**
 * Makes a Node server answer what its parser refuses, and `CONNECT`, with the
 * protocol's typed error body (`serve` does this itself; call it on a server you made
 * with `http.createServer(toNodeListener(handler))`).
 *
 * @example
 * const server = http.createServer(toNodeListener(handler));
 * answerRefusedRequests(server);
 */
export function answerRefusedRequests(server: Server): void {
  server.on('clientError', answerClientError);
  server.on('connect', answerConnect);
}
