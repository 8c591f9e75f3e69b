import { nanoid } from 'nanoid';
import { continuedMessageId, IDEMPOTENCY_KEY_PATTERN, type SubmitAnswer } from '../../protocol/schemas.js';
import { submissionFingerprint } from '../../protocol/canonical-json.js';
import type { HandlerContext } from './handler-context.js';
import { HttpError, jsonResponse } from './responses.js';
import { readSubmitBody } from './submit-body.js';
import type { IdempotencyRecord, StoredTurn } from '../log/turn-log.js';

/** The answer to a key seen before: the first answer again, or why it cannot be given. */
function replayedAnswer(existing: IdempotencyRecord, fingerprint: string, conversationId: string): Response {
  if (existing.fingerprint !== fingerprint) {
    throw new HttpError(422, 'idempotency_key_reused', 'This Idempotency-Key was used before with another conversation or body.');
  }
  if (existing.state === 'in_flight' || existing.turnId === undefined || existing.messageId === undefined) {
    throw new HttpError(409, 'idempotency_key_in_flight', 'A request with this Idempotency-Key is still being processed.', { 'retry-after': '1' });
  }
  const answer: SubmitAnswer = {
    turnId: existing.turnId,
    messageId: existing.messageId,
    conversationId: existing.conversationId ?? conversationId,
    status: 'pending',
  };
  return jsonResponse(200, answer, { 'idempotent-replayed': 'true' });
}

/**
 * `POST /conversations/{id}/messages` (section 1): validates the body, claims the
 * idempotency key atomically (the fingerprint covers `content` and `context`), creates the
 * turn (a continuation when the content is an assistant message, §9) and starts its producer. A key whose
 * turn could not be created is freed so the client's retry can try again.
 */
export async function submitMessage(context: HandlerContext, request: Request, conversationId: string, principal: string): Promise<Response> {
  const { log, producer, report } = context;
  const key = request.headers.get('idempotency-key');
  if (key === null || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new HttpError(400, 'invalid_idempotency_key', 'Idempotency-Key is required: 16 to 128 characters of [A-Za-z0-9_-].');
  }
  const { body, parsed } = await readSubmitBody(request, context.maxBodyBytes);
  const fingerprint = await submissionFingerprint(conversationId, parsed);

  const createdAt = new Date(context.now()).toISOString();
  const existing = await log.putIdempotencyIfAbsent(principal, key, { fingerprint, state: 'in_flight', createdAt });
  if (existing) return replayedAnswer(existing, fingerprint, conversationId);

  let turn: StoredTurn | undefined;
  try {
    if (producer.liveCount >= context.maxLiveTurns) {
      throw new HttpError(503, 'overloaded', 'Too many turns in progress; try again shortly.', { 'retry-after': '1' });
    }
    const { content, context: requestContext } = body;
    turn = await log.createTurn({ id: nanoid(), conversationId, messageId: nanoid(), principal, content, context: requestContext, continues: continuedMessageId(content), createdAt });
    await log.completeIdempotency(principal, key, {
      fingerprint,
      state: 'done',
      turnId: turn.id,
      messageId: turn.messageId,
      conversationId,
      createdAt,
    });
  } catch (cause) {
    // Not awaited: with the log away each step could take the whole store timeout again,
    // and the client's retry (after Retry-After) only needs the key freed by then (a 409
    // meanwhile is retried too).
    void log.deleteIdempotency(principal, key).catch((error: unknown) => report(error, { phase: 'store' }));
    // Created but never to be produced: let its lease go so it ends instead of staying pending.
    const created = turn?.id;
    if (created !== undefined) void log.release?.(created).catch((error: unknown) => report(error, { phase: 'store', turnId: created }));
    throw cause;
  }
  // Per-request headers reach the agent for this turn only; they are never stored (§1).
  const produced = producer.start(turn, request.headers);
  // Handed over before the 202 goes out: a serverless platform freezes the invocation once
  // its answer is sent unless it was asked to wait, and the producer runs past the answer.
  context.waitUntil?.(produced);
  const answer: SubmitAnswer = { turnId: turn.id, messageId: turn.messageId, conversationId, status: 'pending' };
  return jsonResponse(202, answer);
}
