/**
 * The example server's fault lab: breaks the connection between the browser and the
 * reference server on purpose, the way real networks do, so a person (or a test) can
 * watch the client recover. Example code only; nothing here belongs in the SDK.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What the lab reports after each action and from `GET /__lab/state`. */
export interface LabState {
  /** SSE responses currently open. */
  openStreams: number;
  /** Of those, how many are stalled (socket open, no bytes forwarded). */
  stalledStreams: number;
  /** Submissions still to be refused with 503. */
  failNextSubmissions: number;
}

export interface FaultLab {
  /** Wraps the Fetch handler: refuses submissions while asked to, gates SSE bodies. */
  wrap(handler: (request: Request) => Promise<Response>): (request: Request) => Promise<Response>;
  /** Call for every Node request: remembers the sockets of open SSE responses. */
  track(req: IncomingMessage, res: ServerResponse): void;
  /** Destroys the socket of every open SSE response (an RST mid-stream); returns how many. */
  cut(): number;
  /** Stops forwarding bytes on every open SSE response, keeping its socket; returns how many. */
  stall(): number;
  /** The next `count` submissions answer `503` with `Retry-After: retryAfterSeconds`. */
  failSubmissions(count: number, retryAfterSeconds?: number): void;
  state(): LabState;
}

const EVENTS_PATH = /\/turns\/[^/]+\/events$/;
const SUBMIT_PATH = /\/conversations\/[^/]+\/messages$/;

interface Gate {
  stalled: boolean;
}

/**
 * Passes an SSE body through until its gate is stalled; from then on it forwards nothing
 * and never ends by itself, like a proxy that stopped relaying. Cancelling it (the
 * client gave up) still cancels the source, so the handler's follow loop stops.
 */
function gatedBody(source: ReadableStream<Uint8Array>, gate: Gate, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const forever = new Promise<void>(() => {});
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (gate.stalled) return forever;
        const { done, value } = await reader.read();
        // A chunk read just as the stall began is swallowed, as a stuck proxy would.
        if (gate.stalled) return forever;
        if (done) {
          onEnd();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      },
      cancel(reason) {
        onEnd();
        return reader.cancel(reason);
      },
    },
    // Pull only on demand: nothing is read ahead that a stall would have to hold.
    { highWaterMark: 0 },
  );
}

export function createFaultLab(): FaultLab {
  const sockets = new Set<Socket>();
  const gates = new Set<Gate>();
  let failNext = 0;
  let retryAfter = 1;

  return {
    wrap(handler) {
      return async (request) => {
        const path = new URL(request.url).pathname;
        if (failNext > 0 && request.method === 'POST' && SUBMIT_PATH.test(path)) {
          failNext -= 1;
          return new Response(
            JSON.stringify({ error: { code: 'overloaded', message: 'The fault lab refused this submission on purpose.' } }),
            { status: 503, headers: { 'content-type': 'application/json', 'retry-after': String(retryAfter) } },
          );
        }
        const response = await handler(request);
        if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
        const gate: Gate = { stalled: false };
        gates.add(gate);
        const body = gatedBody(response.body, gate, () => gates.delete(gate));
        return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
      };
    },
    track(req, res) {
      if (req.method !== 'GET' || !EVENTS_PATH.test((req.url ?? '').split('?')[0] ?? '')) return;
      const socket = req.socket;
      sockets.add(socket);
      res.once('close', () => sockets.delete(socket));
    },
    cut() {
      const count = sockets.size;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      return count;
    },
    stall() {
      let count = 0;
      for (const gate of gates) {
        if (!gate.stalled) count += 1;
        gate.stalled = true;
      }
      return count;
    },
    failSubmissions(count, retryAfterSeconds = 1) {
      failNext = Math.max(0, Math.floor(count));
      retryAfter = Math.max(0, Math.floor(retryAfterSeconds));
    },
    state() {
      let stalled = 0;
      for (const gate of gates) if (gate.stalled) stalled += 1;
      return { openStreams: gates.size, stalledStreams: stalled, failNextSubmissions: failNext };
    },
  };
}
