/**
 * One stream attempt: exactly one `fetchEventSource` call with its own retry disabled.
 * The library's reconnect loop is not used (docs/faults.md: it retries forever, copies headers
 * once, trusts the wire's `id:`); the follower's machine decides every retry.
 */
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { LifelineError, ProtocolError, TransportError } from '../errors.js';
import { thrownFailure, type Failure } from '../core/failure-policy.js';
import type { Clock } from '../ports/clock.js';
import type { Page } from '../ports/page.js';
import { endpoint, failureFromResponse } from '../transport/http.js';
import { limitBody, type StreamLimits } from '../transport/sse-connection.js';

/** What one attempt needs. */
export interface StreamAttempt {
  baseUrl: string;
  path: string;
  fetch: typeof fetch;
  /** Fresh headers (read under the stall watchdog: a promise that never settles is a stall). */
  headers: () => Promise<Record<string, string>>;
  /** The last seq applied here: the only cursor trusted (never an `id:` the wire sent). */
  lastEventId: number;
  limits: StreamLimits;
  signal: AbortSignal;
  clock: Clock;
  page: Page;
  /** `200 text/event-stream`: the announced heartbeat (docs/protocol.md section 2), when valid. */
  onOpen(heartbeatMs: number | undefined): void;
  /**
   * One message: its data, or `undefined` for a heartbeat or a block without data. Answers
   * a failure when the stream can no longer be trusted (the attempt ends with it).
   */
  onMessage(data: string | undefined): Failure | void;
}

/** How an attempt ended, unless aborted by the follower (then it ends `aborted`). */
export type StreamEnd =
  | { kind: 'aborted' }
  /** `204`: the turn ended with nothing after our cursor. */
  | { kind: 'no-content' }
  /** A cut, an HTTP failure, a bad message; `closed` when the server closed before `turn.end`. */
  | { kind: 'failed'; failure: Failure; closed: boolean };

/** Thrown out of fetch-event-source's callbacks to end an attempt without its own retry. */
const STOP = 0;

/** `Lifeline-Heartbeat: <ms>` as a positive integer, else `undefined` (a hostile value is ignored). */
export function parseHeartbeat(value: string | null): number | undefined {
  return value !== null && /^\d{1,9}$/.test(value.trim()) && Number(value) > 0 ? Number(value) : undefined;
}

/** Runs one attempt to its end. Never rejects. */
export async function runStreamAttempt(attempt: StreamAttempt): Promise<StreamEnd> {
  const { signal } = attempt;
  let end: StreamEnd | undefined;
  const failed = (failure: Failure, closed = false): StreamEnd => (end ??= { kind: 'failed', failure, closed });
  // fetch-event-source 2.0.1 calls `window` and `document` (docs/faults.md); without them its promise never settles.
  if (!attempt.page.isBrowser()) return failed({ error: new LifelineError('invalid_argument', 'Following needs a browser.'), disposition: 'fatal' });
  try {
    // Headers compare case-insensitively: the app's own accept and last-event-id give way to ours.
    const headers = new Headers(await attempt.headers());
    if (signal.aborted) return { kind: 'aborted' };
    headers.set('accept', 'text/event-stream');
    if (attempt.lastEventId) headers.set('last-event-id', String(attempt.lastEventId));
    else headers.delete('last-event-id');
    const url = endpoint(attempt.baseUrl, attempt.path + '/events');
    // Read per message: a plain flag costs less than the signal's getter (abort events fire synchronously).
    let aborted = false;
    signal.addEventListener('abort', () => (aborted = true), { once: true });
    await fetchEventSource(url, {
      signal,
      openWhenHidden: true,
      // The library's header copy (with the wire's last-event-id) is never sent; the body is capped.
      fetch: async (_, init) => limitBody(await attempt.fetch(url, { ...init, headers }), attempt.limits),
      onopen: async (response) => {
        const code = response.status;
        if (code === 200 && /^text\/event-stream/i.test(String(response.headers.get('content-type')))) {
          return attempt.onOpen(parseHeartbeat(response.headers.get('lifeline-heartbeat')));
        }
        if (code === 204) end = { kind: 'no-content' };
        else if (code === 200) failed({ error: new TransportError('unexpected_content_type', 'Not an event stream.', { status: code }), disposition: 'retry' });
        else failed(await failureFromResponse(response, attempt.clock.wallNow()));
        throw STOP;
      },
      onmessage: (message) => {
        // Aborted mid-chunk (turn.end, a gap): the rest of the chunk is not ours to apply.
        if (aborted) return;
        // Heartbeats, comments, empty blocks and `event:` without data carry nothing.
        const failure = attempt.onMessage((message.event !== 'heartbeat' && message.data) || undefined);
        if (failure) {
          failed(failure);
          throw STOP;
        }
      },
      onclose: () => {
        failed({ error: new TransportError('network_error', 'Closed before turn.end.'), disposition: 'retry' }, true);
        throw STOP;
      },
      onerror: (cause) => {
        failed(cause instanceof ProtocolError ? { error: cause, disposition: 'retry' } : thrownFailure(cause));
        throw STOP;
      },
    });
  } catch (cause) {
    // A headers function that throws (a failed token refresh) is retried like a network error.
    if (cause !== STOP && !end) failed(thrownFailure(cause));
  }
  return signal.aborted ? { kind: 'aborted' } : (end ?? failed(thrownFailure(undefined)));
}
