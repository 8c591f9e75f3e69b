/**
 * One page of a turn's log (docs/protocol.md section 3) after the last applied seq. The
 * follower's machine runs pages one at a time, each under its watchdog.
 */
import { ProtocolError, type LifelineError } from '../errors.js';
import { decodeEventValue, type DecodeResult } from '../protocol/decode.js';
import { replayAnswerSchema } from '../protocol/schemas.js';
import { isEnded } from '../core/domain.js';
import type { Failure } from '../core/failure-policy.js';
import { requestJson, type JsonRequest } from '../transport/http.js';

/** Events asked per page (the server may send fewer to bound the answer's size). */
export const REPLAY_LIMIT = 1000;

/** What a page needs. */
export interface PageRequest extends JsonRequest {
  signal: AbortSignal;
  path: string;
  turnId: string;
  /** The cursor: events after it are asked. */
  lastSeq: () => number;
  /** Largest single event, code units (bounds how much of an answer is read). */
  maxEventSize: number;
  /** Applies one decoded event; answers a failure when the log cannot be trusted. */
  take(decoded: DecodeResult): Failure | void;
  /** `turn.end` is applied. */
  ended(): boolean;
}

/** A page applied: how many events, and whether the log holds more. */
export interface PageResult {
  applied: number;
  more: boolean;
}

const fatal = (error: LifelineError): Failure => ({ error, disposition: 'fatal' });

/**
 * Fetches and applies one page; answers what it applied and whether more pages follow,
 * or the failure. A page too large to read is asked again, halved. Never rejects.
 */
export async function fetchReplayPage(request: PageRequest): Promise<PageResult | Failure> {
  for (let limit = REPLAY_LIMIT; ; limit = Math.ceil(limit / 2)) {
    const from = request.lastSeq();
    // The answer is read up to a cap (bounded memory); past it the page is asked again, halved.
    const maxBytes = Math.max(8 * 1024 * 1024, 4 * request.maxEventSize);
    const answer = await requestJson(request, 'GET', `${request.path}?after=${from}&limit=${limit}`, replayAnswerSchema, maxBytes);
    if (answer.ok) {
      const { turn, events, hasMore } = answer.value;
      // Counted from here: events the stream applied while the request was out are not this page's.
      const before = request.lastSeq();
      for (const value of events) {
        const stop = request.take(decodeEventValue(value, request.turnId));
        if (stop) return stop;
      }
      const applied = request.lastSeq() - before;
      if (request.ended()) return { applied, more: false };
      // The turn row is read after the events: it may count events this page lacks.
      const more = hasMore || turn.lastSeq > request.lastSeq();
      // Ended, but no turn.end after our cursor: nothing will fix that.
      if (!more && isEnded(turn.status)) return fatal(new ProtocolError('seq_mismatch', 'Log ended without turn.end.'));
      // An empty page ends the replay even when more was promised: the stream brings the rest (no hot loop).
      return { applied, more: more && events.length > 0 };
    }
    if (!answer.tooLarge) return answer.failure;
    if (limit < 2) return fatal(answer.failure.error);
  }
}
