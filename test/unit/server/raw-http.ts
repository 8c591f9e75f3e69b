/**
 * HTTP/1.1 over a raw socket, for what fetch hides: a reader that stops reading (the
 * socket is paused and nothing drains it), a connection the server closes, the exact
 * bytes of an answer.
 */
import { connect, type Socket } from 'node:net';

export interface RawConnection {
  socket: Socket;
  /** Everything received so far (only grows while the socket is read). */
  received(): Buffer;
  /** Resolves when the server closed the connection. */
  readonly closed: Promise<void>;
  /**
   * Starts (or resumes) reading; resolves with everything received once `predicate`
   * holds on the last bytes received (at most 64, so a long body is not re-scanned).
   */
  readUntil(predicate: (tail: string) => boolean): Promise<Buffer>;
}

/** Opens a connection to `origin` and writes `request` (raw bytes); the socket is not read until asked. */
export async function openRaw(origin: string, request: string | Buffer): Promise<RawConnection> {
  const { hostname, port } = new URL(origin);
  const socket = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  // A reset by the server (closing with our bytes unread) is an outcome tests assert on, not a failure.
  socket.on('error', () => undefined);
  socket.pause();
  socket.write(request);
  const chunks: Buffer[] = [];
  const listeners = new Set<() => void>();
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let reading = false;
  let tail = '';
  const received = (): Buffer => Buffer.concat(chunks);
  return {
    socket,
    received,
    closed,
    readUntil(predicate) {
      if (!reading) {
        reading = true;
        socket.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          tail = (tail + chunk.subarray(-64).toString('latin1')).slice(-64);
          for (const listener of [...listeners]) listener();
        });
        socket.once('close', () => {
          for (const listener of [...listeners]) listener();
        });
        socket.resume();
      }
      return new Promise<Buffer>((resolve, reject) => {
        const check = (): void => {
          if (predicate(tail)) {
            listeners.delete(check);
            resolve(received());
          } else if (socket.destroyed) {
            listeners.delete(check);
            reject(new Error(`The connection closed first; received: ${received().toString('latin1').slice(0, 300)}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** The end of a chunked body: the last chunk is empty. */
export const CHUNKED_END = '\r\n0\r\n\r\n';

/** A GET request for `path` with `headers`. */
export function getRequest(path: string, headers: Record<string, string> = {}): string {
  const lines = [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

/** Parses one HTTP/1.1 response (chunked or with Content-Length); `undefined` until it is complete. */
export function parseResponse(raw: Buffer): RawResponse | undefined {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...lines] = raw.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const at = line.indexOf(':');
    headers.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim());
  }
  const status = Number(statusLine.split(' ')[1]);
  let at = headEnd + 4;
  if (headers.get('transfer-encoding') !== 'chunked') {
    const length = Number(headers.get('content-length') ?? 0);
    return raw.length - at >= length ? { status, headers, body: raw.subarray(at, at + length) } : undefined;
  }
  const parts: Buffer[] = [];
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (size === 0) return raw.length >= lineEnd + 4 ? { status, headers, body: Buffer.concat(parts) } : undefined;
    if (raw.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
