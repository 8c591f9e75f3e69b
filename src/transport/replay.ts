/**
 * The replay endpoint (PROTOCOL.md section 3): one page of a turn's logged events as
 * JSON. Used to fill gaps, after `204`, on stalls and on recovery. Every event is
 * validated on its own, so one bad event is reported without hiding the others.
 */
import { ProtocolError, TransportError } from '../errors.js';
import { decodeEventValue, type DecodeResult } from '../protocol/decode.js';
import { replayAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { endpoint, failureFromResponse, networkFailure, readTextCapped, type Failure } from './http.js';

export interface ReplayPageRequest {
  baseUrl: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  turnId: string;
  /** Events with seq > after. */
  after: number;
  /** Page size asked for (1–10 000). */
  limit: number;
  signal: AbortSignal;
  /** Largest answer read, bytes; past it the page is asked again with half the limit. */
  maxBytes: number;
  now: () => number;
}

/** One replay page, or why there is none. */
export type ReplayPage =
  | { ok: true; turn: TurnObject; events: DecodeResult[]; hasMore: boolean }
  | { ok: false; failure: Failure };

/** Fetches one page; never throws (an abort answers a `network_error` failure the caller ignores). */
export async function fetchReplayPage(request: ReplayPageRequest): Promise<ReplayPage> {
  let limit = request.limit;
  for (;;) {
    const url = endpoint(request.baseUrl, `/turns/${encodeURIComponent(request.turnId)}?after=${request.after}&limit=${limit}`);
    let response: Response;
    try {
      response = await request.fetch(url, {
        method: 'GET',
        headers: { ...request.headers, accept: 'application/json' },
        signal: request.signal,
      });
    } catch (cause) {
      return { ok: false, failure: networkFailure(cause) };
    }
    if (response.status !== 200) return { ok: false, failure: await failureFromResponse(response, request.now()) };
    const type = response.headers.get('content-type') ?? '';
    if (!type.toLowerCase().includes('application/json')) {
      await response.body?.cancel().catch(() => undefined);
      return {
        ok: false,
        failure: {
          error: new TransportError('unexpected_content_type', `Expected application/json, got ${type || '(none)'}.`, { status: 200 }),
          disposition: 'retry',
        },
      };
    }
    let text: string | undefined;
    try {
      text = await readTextCapped(response, request.maxBytes);
    } catch (cause) {
      return { ok: false, failure: networkFailure(cause) };
    }
    if (text === undefined) {
      // Too big for one read: smaller pages, down to one event (which then is simply too large).
      if (limit > 1) {
        limit = Math.ceil(limit / 2);
        continue;
      }
      return {
        ok: false,
        failure: {
          error: new ProtocolError('event_too_large', `One replayed event is over ${request.maxBytes} bytes.`, {
            details: { limit: request.maxBytes },
          }),
          disposition: 'fatal',
        },
      };
    }
    return parsePage(text);
  }
}

function parsePage(text: string): ReplayPage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return { ok: false, failure: { error: new ProtocolError('invalid_response', 'The replay answer is not JSON.', { cause }), disposition: 'retry' } };
  }
  const parsed = replayAnswerSchema.safeParse(value);
  if (!parsed.success) {
    return {
      ok: false,
      failure: {
        error: new ProtocolError('invalid_response', 'The replay answer does not match the protocol.', { details: parsed.error.issues }),
        disposition: 'retry',
      },
    };
  }
  return { ok: true, turn: parsed.data.turn, events: parsed.data.events.map(decodeEventValue), hasMore: parsed.data.hasMore };
}
