import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toRequest } from './request.js';
import { FETCH_METHODS, answerRefusedRequests, isForbiddenMethod } from './refusals.js';
import { errorResponse } from '../http/responses.js';
import { takeFollowWriter, type FollowWriter } from '../http/follow-stream.js';

export { answerRefusedRequests } from './refusals.js';

/** A Fetch-style handler, e.g. from `createLifelineHandler`. */
export type FetchHandler = (request: Request) => Promise<Response>;

/** A Node `http` request listener. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Options of {@link toNodeListener}. */
export interface NodeListenerOptions {
  /** Called when the handler throws or a response body fails mid-stream. Default `console.error`. */
  onError?: (error: unknown) => void;
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

/**
 * A follow stream written straight to the connection: the follower writes its shared
 * frames with `res.write` while the socket takes them and resumes on `drain`, instead of
 * a web stream read chunk by chunk. The same bytes as reading the body would give.
 */
function writeFollow(writer: FollowWriter, res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const onDrain = (): void => writer.resume();
    const onClose = (): void => {
      writer.cancel();
      settle();
    };
    function settle(): void {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve();
    }
    res.on('drain', onDrain);
    res.on('close', onClose);
    writer.start({
      write: (chunk) => !res.destroyed && res.write(chunk),
      end() {
        settle();
        if (!res.destroyed) res.end();
      },
      fail(error) {
        res.off('drain', onDrain);
        res.off('close', onClose);
        reject(error);
      },
    });
  });
}

async function writeResponse(response: Response, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  // Answered before the request body ended (a 413, an early 400): close rather than
  // read the rest, which a hostile client may never end.
  if (!req.complete) headers['connection'] = 'close';
  res.writeHead(response.status, response.statusText || undefined, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  // A stream must show its headers now, not with its first event.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) res.flushHeaders();
  const follow = takeFollowWriter(response.body);
  if (follow !== undefined) return writeFollow(follow, res);
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
 * streamed at the client's pace (the next chunk is read only after `drain`), and a
 * handler that throws answers `500 internal_error` instead of crashing the process.
 * Methods a `Request` cannot carry (`TRACE`, `TRACK`) answer `405` with the typed body
 * before anything is parsed; an answer given before the request body ended closes the
 * connection. Use {@link answerRefusedRequests} on your server for typed answers to
 * what Node's parser refuses (`serve` does).
 *
 * @example
 * http.createServer(toNodeListener(createLifelineHandler({ agent }))).listen(8787);
 */
export function toNodeListener(handler: FetchHandler, options: NodeListenerOptions = {}): NodeListener {
  const onError = options.onError ?? ((error: unknown) => console.error('[lifeline] node adapter:', error));
  return (req, res) => {
    if (isForbiddenMethod(req.method ?? '')) {
      const refused = errorResponse(405, 'method_not_allowed', 'This method is not served here.', { allow: FETCH_METHODS });
      writeResponse(refused, req, res).catch(() => res.destroy());
      return;
    }
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own refusal has an empty body.
    if (req.httpVersion === '1.1' && req.headers.host === undefined) {
      writeResponse(errorResponse(400, 'bad_request', 'HTTP/1.1 requests need a Host header.'), req, res).catch(() => res.destroy());
      return;
    }
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
        await writeResponse(response, req, res);
      } catch (error) {
        onError(error);
        if (!res.headersSent) {
          await writeResponse(errorResponse(500, 'internal_error', 'The server failed to handle this request.'), req, res).catch(() => undefined);
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
  /**
   * Signals that drain and stop the server (then the signal is raised again, so the
   * process exits as it would have): `close({ drainMs })`. Default none; a deployed
   * server wants `['SIGTERM', 'SIGINT']`.
   */
  shutdownSignals?: readonly NodeJS.Signals[];
  /** The drain of a shutdown by signal, ms (see {@link ServedHandler.close}). Default 10 000. */
  drainMs?: number;
}

/** A handler that can drain: `createLifelineHandler`'s. */
interface Drainable {
  close(options?: { drainMs?: number }): Promise<void>;
}

/** A running Node server from {@link serve}. */
export interface ServedHandler {
  /** Origin, e.g. `http://127.0.0.1:8787`. */
  url: string;
  port: number;
  server: Server;
  /**
   * Stops the server. With `drainMs` (and a handler that can drain, like
   * `createLifelineHandler`'s) it first drains: new submissions answer `503
   * shutting_down`, live turns may finish for up to `drainMs` while their followers keep
   * streaming, the rest end `server_shutdown`. Then it stops listening and cuts what is
   * still open (followers resume on another instance). Without it, it stops at once.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/** The drain of a shutdown by signal unless `drainMs` says otherwise. */
export const DEFAULT_DRAIN_MS = 10_000;

function isDrainable(handler: FetchHandler): handler is FetchHandler & Drainable {
  return typeof (handler as Partial<Drainable>).close === 'function';
}

/**
 * Serves a Fetch-style handler with Node's `http` module, answering what Node's parser
 * refuses with typed bodies too ({@link answerRefusedRequests}).
 *
 * @example
 * const { url } = await serve(createLifelineHandler({ agent, basePath: '/api' }), { port: 8787 });
 */
export async function serve(handler: FetchHandler, options: ServeOptions = {}): Promise<ServedHandler> {
  const host = options.host ?? '127.0.0.1';
  // Host is checked by the listener, which answers its absence with a typed body.
  const server = createServer({ requireHostHeader: false }, toNodeListener(handler, options));
  answerRefusedRequests(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  const close = (closeOptions: { drainMs?: number } = {}): Promise<void> =>
    (closing ??= (async () => {
      for (const signal of signals) process.off(signal, onSignal);
      if (closeOptions.drainMs !== undefined && isDrainable(handler)) await handler.close({ drainMs: closeOptions.drainMs });
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    })());
  const signals = options.shutdownSignals ?? [];
  function onSignal(signal: NodeJS.Signals): void {
    void close({ drainMs: options.drainMs ?? DEFAULT_DRAIN_MS }).finally(() => process.kill(process.pid, signal));
  }
  for (const signal of signals) process.once(signal, onSignal);
  return { url: `http://${shownHost}:${port}`, port, server, close };
}
