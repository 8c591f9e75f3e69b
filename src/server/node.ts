import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorResponse } from './responses.js';

/** A Fetch-style handler, e.g. from `createLifelineHandler`. */
export type FetchHandler = (request: Request) => Promise<Response>;

/** A Node `http` request listener. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Options of {@link toNodeListener}. */
export interface NodeListenerOptions {
  /** Called when the handler throws or a response body fails mid-stream. Default `console.error`. */
  onError?: (error: unknown) => void;
}

/**
 * The request body as a web stream that pauses the socket when nobody reads it.
 * Cancelling discards the rest instead of destroying the socket, so an early answer
 * (e.g. `413`) still reaches the client.
 */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.on('end', () => {
          if (settled) return;
          settled = true;
          controller.close();
        });
        req.on('error', (error) => {
          if (settled) return;
          settled = true;
          controller.error(error);
        });
        req.on('close', () => {
          if (settled) return;
          settled = true;
          controller.error(new Error('The request was aborted before its body ended.'));
        });
      },
      pull() {
        req.resume();
      },
      cancel() {
        settled = true;
        req.resume();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

function requestUrl(req: IncomingMessage): string {
  const scheme = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const target = req.url ?? '/';
  try {
    return new URL(target, `${scheme}://${req.headers.host ?? 'localhost'}`).href;
  } catch {
    // A Host header that is not a valid authority: the path is all the handler needs.
    return new URL(target, `${scheme}://localhost`).href;
  }
}

function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i] as string, raw[i + 1] as string);
    } catch {
      // A header value Headers refuses (Node accepts a few more bytes) is dropped.
    }
  }
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = bodyStream(req);
    init.duplex = 'half';
  }
  return new Request(requestUrl(req), init);
}

function waitForDrain(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText || undefined, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  // A stream must show its headers now, not with its first event.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) res.flushHeaders();
  const reader = response.body.getReader();
  const onClose = (): void => {
    reader.cancel().catch(() => undefined);
  };
  res.on('close', onClose);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) return;
      if (!res.write(value)) await waitForDrain(res);
    }
    res.end();
  } finally {
    res.off('close', onClose);
  }
}

/**
 * Adapts a Fetch-style handler to Node's `http` module: the `Request` carries an
 * `AbortSignal` that aborts when the client disconnects, the `Response` body is
 * streamed with backpressure, and a handler that throws answers `500 internal_error`
 * instead of crashing the process.
 *
 * @example
 * http.createServer(toNodeListener(createLifelineHandler({ agent }))).listen(8787);
 */
export function toNodeListener(handler: FetchHandler, options: NodeListenerOptions = {}): NodeListener {
  const onError = options.onError ?? ((error: unknown) => console.error('[lifeline] node adapter:', error));
  return (req, res) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    void (async () => {
      let response: Response;
      try {
        response = await handler(toRequest(req, controller.signal));
      } catch (error) {
        onError(error);
        response = errorResponse(500, 'internal_error', 'The server failed to handle this request.');
      }
      try {
        await writeResponse(response, res);
      } catch (error) {
        onError(error);
        if (!res.headersSent) {
          await writeResponse(errorResponse(500, 'internal_error', 'The server failed to handle this request.'), res).catch(() => undefined);
        } else {
          // Mid-body: cutting the connection is the only honest signal left.
          res.destroy();
        }
      }
    })();
  };
}

/** Options of {@link serve}. */
export interface ServeOptions extends NodeListenerOptions {
  /** Interface to bind. Default `'127.0.0.1'`. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
}

/** A running Node server from {@link serve}. */
export interface ServedHandler {
  /** Origin, e.g. `http://127.0.0.1:8787`. */
  url: string;
  port: number;
  server: Server;
  /** Stops listening and cuts open connections (live streams included). */
  close(): Promise<void>;
}

/**
 * Serves a Fetch-style handler with Node's `http` module.
 *
 * @example
 * const { url } = await serve(createLifelineHandler({ agent, basePath: '/api' }), { port: 8787 });
 */
export async function serve(handler: FetchHandler, options: ServeOptions = {}): Promise<ServedHandler> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer(toNodeListener(handler, options));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
