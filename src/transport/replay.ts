/**
 * The replay endpoint (PROTOCOL.md section 3): one page of a turn's logged events as
 * JSON. Used to fill gaps, after `204`, on stalls and on recovery. Every event is
 * validated on its own, so one bad event is reported without hiding the others.
 */
import { ProtocolError } from '../errors.js';
import { decodeEventValue, type DecodeResult } from '../protocol/decode.js';
import { replayAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { requestJson, type Failure } from './http.js';

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
  const path = `/turns/${encodeURIComponent(request.turnId)}?after=${request.after}`;
  for (let limit = request.limit; ; limit = Math.ceil(limit / 2)) {
    const answer = await requestJson(request, 'GET', `${path}&limit=${limit}`, replayAnswerSchema, request.maxBytes, 'replay');
    if (answer.ok) {
      const { turn, events, hasMore } = answer.value;
      return { ok: true, turn, events: events.map(decodeEventValue), hasMore };
    }
    // Too big for one read: smaller pages, down to one event (which then is simply too large).
    if (!answer.tooLarge) return answer;
    if (limit === 1) {
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
  }
}
