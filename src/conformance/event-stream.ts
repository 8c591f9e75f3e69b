/**
 * Follows a turn (`GET /turns/{id}/events`) and keeps everything the server sent, with
 * the time each piece arrived, so checks can judge framing, order and silences. Every
 * wait is bounded; a stream is aborted once its reader is done with it.
 */
import { CheckFailure } from './check.js';
import { describeFailure, urlOf, type Answer, type HttpSettings } from './http.js';
import { createSseParser, type SseItem } from './sse-parser.js';

/** A parsed item and when it arrived (ms since the request was sent). */
export interface TimedItem {
  item: SseItem;
  at: number;
}

/** How to resume: header and/or query, raw strings so invalid values can be sent. */
export interface ResumePoint {
  lastEventId?: string;
  after?: string;
}

/** An open follow request. */
export interface FollowStream {
  status: number;
  headers: Headers;
  /** For non-200 answers: the body text (already read). */
  text: string;
  /** Items so far, in arrival order. */
  readonly items: readonly TimedItem[];
  /** Arrival times of every body chunk (ms since the request), to measure silences. */
  readonly chunkTimes: readonly number[];
  /** When the response headers arrived (ms since the request). */
  headersAt: number;
  /** True once the server ended the body by itself. */
  readonly ended: boolean;
  /** True when the body ended inside an unterminated block. */
  readonly unterminated: boolean;
  /** A read error, when the body broke rather than ended. */
  readonly readError: string | undefined;
  /** Resolves true once `predicate` holds, false when the body ends or `timeoutMs` passes first. */
  until(predicate: (items: readonly TimedItem[]) => boolean, timeoutMs: number): Promise<boolean>;
  /** Resolves true once the body ended, false after `timeoutMs`. */
  untilEnd(timeoutMs: number): Promise<boolean>;
  /** Aborts the request. */
  close(): void;
}

function followPath(turnId: string, resume: ResumePoint): string {
  const query = resume.after === undefined ? '' : `?after=${encodeURIComponent(resume.after)}`;
  return `/turns/${encodeURIComponent(turnId)}/events${query}`;
}

/** Opens a follow request; the headers arrive within the timeout or the check fails. */
export async function openFollow(http: HttpSettings, turnId: string, resume: ResumePoint = {}): Promise<FollowStream> {
  const path = followPath(turnId, resume);
  const abort = new AbortController();
  const started = performance.now();
  const headerTimer = setTimeout(() => abort.abort(), http.timeoutMs);
  let response: Response;
  try {
    response = await fetch(urlOf(http.baseUrl, path), {
      headers: {
        ...http.headers,
        accept: 'text/event-stream',
        ...(resume.lastEventId === undefined ? {} : { 'last-event-id': resume.lastEventId }),
      },
      signal: abort.signal,
      redirect: 'manual',
    });
  } catch (cause) {
    throw new CheckFailure(`GET ${path}: ${describeFailure(abort.signal.aborted ? { name: 'TimeoutError' } : cause, http.timeoutMs)}`);
  } finally {
    clearTimeout(headerTimer);
  }
  const headersAt = performance.now() - started;
  if (response.status !== 200) return finishedAnswer(http, path, response, headersAt, abort);
  return readingStream(response, headersAt, started, abort);
}

async function finishedAnswer(http: HttpSettings, path: string, response: Response, headersAt: number, abort: AbortController): Promise<FollowStream> {
  const timer = setTimeout(() => abort.abort(), http.timeoutMs);
  let text = '';
  try {
    text = await response.text();
  } catch (cause) {
    throw new CheckFailure(`GET ${path}: body of the ${response.status} answer: ${describeFailure(cause, http.timeoutMs)}`);
  } finally {
    clearTimeout(timer);
  }
  const answer: Answer = { method: 'GET', path, status: response.status, headers: response.headers, text };
  if (response.status >= 400) http.onErrorAnswer(answer);
  return {
    status: response.status,
    headers: response.headers,
    text,
    items: [],
    chunkTimes: [],
    headersAt,
    ended: true,
    unterminated: false,
    readError: undefined,
    until: async () => false,
    untilEnd: async () => true,
    close: () => undefined,
  };
}

function readingStream(response: Response, headersAt: number, started: number, abort: AbortController): FollowStream {
  const items: TimedItem[] = [];
  const chunkTimes: number[] = [];
  const wakers = new Set<() => void>();
  const wake = (): void => {
    for (const waker of [...wakers]) waker();
  };
  const parser = createSseParser((item) => items.push({ item, at: performance.now() - started }));
  const state = { ended: false, readError: undefined as string | undefined, finished: false };

  void (async () => {
    const decoder = new TextDecoder();
    try {
      if (response.body === null) return;
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunkTimes.push(performance.now() - started);
        parser.feed(decoder.decode(value, { stream: true }));
        wake();
      }
      parser.feed(decoder.decode());
      state.ended = true;
    } catch (cause) {
      if (!abort.signal.aborted) state.readError = String((cause as Error)?.message ?? cause);
    } finally {
      parser.end();
      state.finished = true;
      wake();
    }
  })();

  function wait(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const settle = (value: boolean): void => {
        clearTimeout(timer);
        wakers.delete(check);
        resolve(value);
      };
      const check = (): void => {
        if (predicate()) settle(true);
        else if (state.finished) settle(false);
      };
      const timer = setTimeout(() => settle(false), timeoutMs);
      wakers.add(check);
      check();
    });
  }

  return {
    status: response.status,
    headers: response.headers,
    text: '',
    items,
    chunkTimes,
    headersAt,
    get ended() {
      return state.ended;
    },
    get unterminated() {
      return parser.unterminated;
    },
    get readError() {
      return state.readError;
    },
    until: (predicate, timeoutMs) => wait(() => predicate(items), timeoutMs),
    untilEnd: (timeoutMs) => wait(() => state.finished, timeoutMs).then(() => state.finished),
    close: () => abort.abort(),
  };
}

/** Follows a turn to its end (or fails after `timeoutMs`) and returns the closed stream. */
export async function followToEnd(http: HttpSettings, turnId: string, resume: ResumePoint, timeoutMs: number): Promise<FollowStream> {
  const stream = await openFollow(http, turnId, resume);
  const ended = await stream.untilEnd(timeoutMs);
  stream.close();
  if (!ended) throw new CheckFailure(`GET /turns/${turnId}/events did not end within ${timeoutMs} ms (${stream.items.length} items read)`);
  if (stream.readError !== undefined) throw new CheckFailure(`GET /turns/${turnId}/events broke while reading: ${stream.readError}`);
  return stream;
}
