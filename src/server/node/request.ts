import type { IncomingMessage } from 'node:http';

/**
 * The request body as a web stream that pauses the socket when nobody reads it.
 * Cancelling discards what still arrives instead of destroying the socket, so an early
 * answer (e.g. `413`) still reaches the client; that answer then closes the connection
 * (see `writeResponse`), so a body that never ends is not read forever.
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

/** A Fetch `Request` for a Node request; `signal` aborts when the client goes away. */
export function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
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
