/**
 * The small one-shot requests: cancel a turn (section 5) and list a conversation's
 * turns (section 4). Failures reject with a typed {@link LifelineError}.
 */
import { cancelAnswerSchema, listAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { requestJson, type JsonAnswer, type JsonRequest } from './http.js';
import { withRetry, type RetryLoop } from './retry.js';

export type RequestContext = JsonRequest;

/** Largest answer of these requests, bytes (a list of 200 turn objects is ~60 KiB). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

function unwrap<T>(answer: JsonAnswer<T>): T {
  if (!answer.ok) throw answer.failure.error;
  return answer.value;
}

/** Asks the server to cancel `turnId`; resolves with the turn object it answered. */
export async function cancelTurn(context: RequestContext, turnId: string): Promise<TurnObject> {
  return unwrap(await requestJson(context, 'POST', `/turns/${encodeURIComponent(turnId)}/cancel`, cancelAnswerSchema, MAX_ANSWER_BYTES, 'cancel')).turn;
}

/**
 * A conversation's turns, newest first (at most `limit`, 1–200). Retried through `retry`
 * (network, 5xx, 429 …), with headers read again for each attempt.
 */
export async function listTurns(
  context: Omit<RequestContext, 'headers'> & { headers: () => Promise<Record<string, string>> },
  conversationId: string,
  retry: RetryLoop,
  limit = 200,
): Promise<TurnObject[]> {
  const path = `/conversations/${encodeURIComponent(conversationId)}/turns?limit=${limit}`;
  const answer = await withRetry(retry, async () => requestJson({ ...context, headers: await context.headers() }, 'GET', path, listAnswerSchema, MAX_ANSWER_BYTES, 'list'));
  return answer.turns;
}
