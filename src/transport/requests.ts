/**
 * The small one-shot requests: cancel a turn (section 5) and list a conversation's
 * turns (section 4). Failures reject with a typed {@link LifelineError}.
 */
import { ProtocolError, type LifelineError } from '../errors.js';
import { cancelAnswerSchema, listAnswerSchema, type TurnObject } from '../protocol/schemas.js';
import { endpoint, failureFromResponse, networkFailure, readTextCapped } from './http.js';

export interface RequestContext {
  baseUrl: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  now: () => number;
  signal?: AbortSignal;
}

/** Largest answer of these requests, bytes (a list of 200 turn objects is ~60 KiB). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** Asks the server to cancel `turnId`; resolves with the turn object it answered. */
export async function cancelTurn(context: RequestContext, turnId: string): Promise<TurnObject> {
  const answer = await requestJson(context, 'POST', `/turns/${encodeURIComponent(turnId)}/cancel`);
  const parsed = cancelAnswerSchema.safeParse(answer);
  if (!parsed.success) throw new ProtocolError('invalid_response', 'The cancel answer does not match the protocol.', { details: parsed.error.issues });
  return parsed.data.turn;
}

/** A conversation's turns, newest first (at most `limit`, 1–200). */
export async function listTurns(context: RequestContext, conversationId: string, limit = 200): Promise<TurnObject[]> {
  const answer = await requestJson(context, 'GET', `/conversations/${encodeURIComponent(conversationId)}/turns?limit=${limit}`);
  const parsed = listAnswerSchema.safeParse(answer);
  if (!parsed.success) throw new ProtocolError('invalid_response', 'The list answer does not match the protocol.', { details: parsed.error.issues });
  return parsed.data.turns;
}

async function requestJson(context: RequestContext, method: 'GET' | 'POST', path: string): Promise<unknown> {
  let response: Response;
  try {
    response = await context.fetch(endpoint(context.baseUrl, path), {
      method,
      headers: { ...context.headers, accept: 'application/json' },
      ...(context.signal ? { signal: context.signal } : {}),
    });
  } catch (cause) {
    throw networkFailure(cause).error;
  }
  if (response.status !== 200 && response.status !== 202) throw (await failureFromResponse(response, context.now())).error;
  const text = await readTextCapped(response, MAX_ANSWER_BYTES).catch((cause: unknown): LifelineError => networkFailure(cause).error);
  if (typeof text !== 'string') {
    throw text ?? new ProtocolError('invalid_response', `The answer is over ${MAX_ANSWER_BYTES} bytes.`);
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ProtocolError('invalid_response', 'The answer is not JSON.', { cause });
  }
}
