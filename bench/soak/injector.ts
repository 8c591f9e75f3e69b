/**
 * Handler-level fault injection, a thin wrapper around the reference server's Fetch
 * handler: `503`/`429` with `Retry-After` on a turn's submission and replay, and an
 * event sent twice or left out on the wire (the stream body is re-cut at event
 * boundaries for that). Byte-level faults (reset, stall, close) belong to the fault
 * proxy in front of the server.
 */
import type { FetchHandler } from '../../src/server/node/index.js';
import { soakIndexOf } from './agent.js';
import type { FaultBook } from './fault-book.js';
import type { Fault } from './schedule.js';

const SUBMIT_PATH = /^\/api\/conversations\/[^/]+\/messages$/;
const REPLAY_PATH = /^\/api\/turns\/([^/]+)$/;
const STREAM_PATH = /^\/api\/turns\/([^/]+)\/events$/;

function overloaded(status: 503 | 429): Response {
  const code = status === 503 ? 'overloaded' : 'rate_limited';
  return new Response(JSON.stringify({ error: { code, message: `soak: injected ${status}` } }), {
    status,
    headers: { 'content-type': 'application/json', 'retry-after': '1' },
  });
}

/**
 * Re-sends (`duplicate-seq`) or leaves out (`gap-seq`) the `atEvent`-th event block of
 * the body. Never touches `turn.end` (leaving it out would be a cut, not a gap); if the
 * stream ends before that event, the fault goes back to the book.
 */
function rewriteEvents(body: ReadableStream<Uint8Array>, fault: Fault, book: FaultBook, onActed: () => void): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = '';
  let events = 0;
  let acted = false;
  const target = fault.atEvent ?? 1;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          const isEvent = /^id:/m.test(block);
          if (isEvent) events++;
          if (!acted && isEvent && events === target && !/^event: turn\.end$/m.test(block)) {
            acted = true;
            onActed();
            if (fault.kind === 'duplicate-seq') controller.enqueue(encoder.encode(block + block));
            continue;
          }
          controller.enqueue(encoder.encode(block));
        }
      },
      flush(controller) {
        buffer += decoder.decode();
        if (buffer) controller.enqueue(encoder.encode(buffer));
        if (!acted) book.giveBack(fault);
      },
    }),
  );
}

export interface InjectorLog {
  streams: number;
  replays: number;
  submits: number;
}

/**
 * Wraps `handler` with the soak's handler-level faults, driven by `book`. `rewrites`
 * holds the duplicate/gap fault the proxy's plan picked for a turn's next stream request.
 */
export function withInjectedFaults(handler: FetchHandler, book: FaultBook, stats: InjectorLog, rewrites: Map<string, Fault>): FetchHandler {
  return async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method === 'POST' && SUBMIT_PATH.test(path)) {
      stats.submits++;
      const index = soakIndexOf(((await request.clone().json().catch(() => ({}))) as { content?: unknown }).content);
      const fault = index === undefined ? undefined : book.takeSubmit(index);
      if (fault) return overloaded(fault.kind === 'submit-429' ? 429 : 503);
      return handler(request);
    }
    const replay = request.method === 'GET' ? REPLAY_PATH.exec(path) : null;
    if (replay) {
      stats.replays++;
      const fault = book.takeReplay(replay[1]!);
      if (fault) return overloaded(fault.kind === 'replay-429' ? 429 : 503);
      return handler(request);
    }
    const stream = request.method === 'GET' ? STREAM_PATH.exec(path) : null;
    if (stream) {
      stats.streams++;
      const fault = rewrites.get(stream[1]!);
      rewrites.delete(stream[1]!);
      const response = await handler(request);
      if (!fault) return response;
      if (response.status !== 200 || !response.body) {
        book.giveBack(fault);
        return response;
      }
      return new Response(rewriteEvents(response.body, fault, book, () => book.fired(fault)), {
        status: response.status,
        headers: response.headers,
      });
    }
    return handler(request);
  };
}
