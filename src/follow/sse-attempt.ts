/**
 * One stream attempt: one request through the http port, its body read with
 * `@microsoft/fetch-event-source`'s parser alone (`getBytes` → `getLines`), its lines made
 * messages by transport/sse-messages.ts (the data only).
 * The library's `fetchEventSource` loop is not used (docs/faults.md: it retries forever,
 * copies headers once, trusts the wire's `id:`, needs `window` and `document`); the
 * follower's machine decides every retry, and this file what the answer means.
 */
import { getBytes, getLines } from '@microsoft/fetch-event-source/lib/esm/parse.js';
import { LifelineError, ProtocolError, TransportError } from '../errors.js';
import { thrownFailure, type Failure } from '../core/failure-policy.js';
import type { Clock } from '../ports/clock.js';
import type { Page } from '../ports/page.js';
import { endpoint, failureFromResponse } from '../transport/http.js';
import { limitBody, type StreamLimits } from '../transport/sse-connection.js';
import { sseMessages } from '../transport/sse-messages.js';

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

/** Thrown out of the parser's callback to stop reading once a message failed the attempt. */
const STOP = 0;

/** `Lifeline-Heartbeat: <ms>` as a positive integer, else `undefined` (a hostile value is ignored). */
export function parseHeartbeat(value: string | null): number | undefined {
  return value !== null && /^\d{1,9}$/.test(value.trim()) && Number(value) > 0 ? Number(value) : undefined;
}

/** The request's headers: the app's fresh ones, where its own accept and last-event-id give way to ours (case-insensitively). */
function streamHeaders(app: Record<string, string>, lastEventId: number): Headers {
  const headers = new Headers(app);
  headers.set('accept', 'text/event-stream');
  if (lastEventId) headers.set('last-event-id', String(lastEventId));
  else headers.delete('last-event-id');
  return headers;
}

/** Runs one attempt to its end. Never rejects. */
export async function runStreamAttempt(attempt: StreamAttempt): Promise<StreamEnd> {
  const { signal } = attempt;
  let end: StreamEnd | undefined;
  const failed = (failure: Failure, closed = false): StreamEnd => (end ??= { kind: 'failed', failure, closed });
  // A server render must not open streams (they would retry for as long as the process lives): following is the browser's.
  if (!attempt.page.isBrowser()) return failed({ error: new LifelineError('invalid_argument', 'Following needs a browser.'), disposition: 'fatal' });
  let headers: Headers;
  try {
    headers = streamHeaders(await attempt.headers(), attempt.lastEventId);
  } catch (cause) {
    // A headers function that throws (a failed token refresh) is retried like a network error.
    return signal.aborted ? { kind: 'aborted' } : failed(thrownFailure(cause));
  }
  if (signal.aborted) return { kind: 'aborted' };
  // The request's own controller: the connection closes as soon as the attempt ends, however it ends.
  const request = new AbortController();
  // Read per message: a plain flag costs less than the signal's getter (abort events fire synchronously).
  let aborted = false;
  // An abort ends the attempt at once, even while a custom fetch or body ignores its signal.
  const stopped = new Promise<void>((resolve) => {
    signal.addEventListener('abort', () => ((aborted = true), request.abort(), resolve()), { once: true });
  });
  // `id:` and `retry:` are not read at all: the cursor is ours, so is the backoff.
  const onMessage = (data: string | undefined): void => {
    // Aborted mid-chunk (turn.end, a gap): the rest of the chunk is not ours to apply.
    if (aborted) return;
    // Heartbeats, comments, empty blocks and `event:` without data carry nothing (undefined).
    const failure = attempt.onMessage(data);
    if (failure) {
      failed(failure);
      throw STOP;
    }
  };
  const read = async (): Promise<void> => {
    const url = endpoint(attempt.baseUrl, attempt.path + '/events');
    const response = limitBody(await attempt.fetch(url, { headers, signal: request.signal }), attempt.limits);
    const code = response.status;
    if (code === 200 && /^text\/event-stream/i.test(String(response.headers.get('content-type')))) {
      attempt.onOpen(parseHeartbeat(response.headers.get('lifeline-heartbeat')));
      // A body the platform left out fails in getBytes like a broken one.
      await getBytes(response.body!, getLines(sseMessages(onMessage)));
      // The server closed cleanly: before turn.end (the follower aborts at turn.end), so a cut.
      failed({ error: new TransportError('network_error', 'Closed before turn.end.'), disposition: 'retry' }, true);
    } else if (code === 204) end = { kind: 'no-content' };
    else if (code === 200) failed({ error: new TransportError('unexpected_content_type', 'Not an event stream.', { status: code }), disposition: 'retry' });
    else failed(await failureFromResponse(response, attempt.clock.wallNow()));
  };
  try {
    await Promise.race([read(), stopped]);
  } catch (cause) {
    // A fetch that threw, a broken body, or a cap on the body passed (a ProtocolError: the stream is retried).
    if (cause !== STOP) failed(cause instanceof ProtocolError ? { error: cause, disposition: 'retry' } : thrownFailure(cause));
  } finally {
    request.abort();
  }
  return signal.aborted ? { kind: 'aborted' } : (end ?? failed(thrownFailure(undefined)));
}
