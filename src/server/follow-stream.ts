import type { TurnEvent } from '../protocol/schemas.js';
import { isExpiredTurn, type TurnLog } from './turn-log.js';

/** Events read from the log per chunk written; each read page becomes one write. */
const FOLLOW_PAGE = 2000;

/** One SSE message for a logged event: `id` = seq, `event` = type, one line of JSON data. */
function sseMessage(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

const HEARTBEAT = 'event: heartbeat\ndata: {}\n\n';

export interface FollowOptions {
  log: TurnLog;
  turnId: string;
  /** Last seq the client has; the stream sends seq > after. */
  after: number;
  retryMs: number;
  heartbeatMs: number;
  /** The request's signal: the loop stops and releases its log waiters when it aborts. */
  signal: AbortSignal;
}

/**
 * The body of a follow answer (section 2): `retry:`, then every logged event after
 * the resume point, then live events, heartbeats while idle, and the end after
 * `turn.end`. Pull-based, so a slow reader applies backpressure all the way to the
 * log reads; everything already logged goes out as one chunk per page read.
 */
export function createFollowStream(options: FollowOptions): ReadableStream<Uint8Array> {
  const { log, turnId, retryMs, heartbeatMs, signal } = options;
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const release = (): void => {
    signal.removeEventListener('abort', onAbort);
    stop.abort();
  };
  if (signal.aborted) stop.abort();

  let cursor = options.after;
  let prefix = `retry: ${retryMs}\n\n`;

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let waited = false;
      for (;;) {
        if (stop.signal.aborted) {
          release();
          // The reader may already have cancelled the stream, which closes it.
          try {
            controller.close();
          } catch {
            // already closed by cancel()
          }
          return;
        }
        const page = await log.read(turnId, cursor, FOLLOW_PAGE);
        if (page.events.length > 0) {
          let chunk = prefix;
          prefix = '';
          let ended = false;
          for (const event of page.events) {
            chunk += sseMessage(event);
            cursor = event.seq;
            if (event.type === 'turn.end') ended = true;
          }
          controller.enqueue(encoder.encode(chunk));
          if (ended) {
            release();
            controller.close();
          }
          return;
        }
        if (prefix !== '') {
          // Nothing logged yet: send `retry:` at once so the client sees a live stream.
          controller.enqueue(encoder.encode(prefix));
          prefix = '';
          return;
        }
        if (waited) {
          // The wait ended with nothing new: a timeout, unless the turn ended or vanished.
          const turn = await log.getTurn(turnId);
          if (turn === undefined || isExpiredTurn(turn) || turn.endedAt !== undefined) {
            release();
            controller.close();
            return;
          }
          controller.enqueue(encoder.encode(HEARTBEAT));
          return;
        }
        await log.waitForEvents(turnId, cursor, { signal: stop.signal, timeoutMs: heartbeatMs });
        waited = true;
      }
    },
    cancel() {
      release();
    },
  });
}
