/**
 * The operator API (docs/protocol.md section 11): list turns by state through the log's
 * operator index, show one turn with its events, end a live one. Every route sees every
 * principal's turns, which is why the whole API hides behind `authorizeOperator`
 * (operator-access.ts) and answers `404` while off or refused.
 */
import { sha256Hex } from '../../protocol/integrity.js';
import { ID_PATTERN } from '../../protocol/schemas.js';
import { operatorStateSchema, type OperatorEndAnswer, type OperatorListAnswer, type OperatorShowAnswer, type OperatorTurn } from '../../protocol/server-schemas.js';
import type { HandlerContext } from './handler-context.js';
import type { OperatorSettings } from './operator-access.js';
import { parseLimit, resumePoint } from './request-parsing.js';
import { HttpError, jsonResponse } from './responses.js';
import { readSmallJson } from './small-json.js';
import { isEnded, turnObject } from './turn-routes.js';
import type { OperatorQuery } from '../log/turn-log.js';
import { isExpiredTurn, type StoredTurn } from '../log/turn-log.js';

const LIST_PARAMS = new Set(['state', 'principal', 'conversation', 'since', 'limit']);
const MAX_REASON = 1000;

const invalid = (message: string): HttpError => new HttpError(400, 'invalid_query', message);

function operatorTurn(turn: StoredTurn): OperatorTurn {
  return { ...turnObject(turn), principal: turn.principal };
}

/** The listing's query, every field checked; anything else is `400 invalid_query`. */
function listQuery(url: URL, settings: OperatorSettings): OperatorQuery {
  const params = url.searchParams;
  for (const name of params.keys()) if (!LIST_PARAMS.has(name)) throw invalid(`Unknown parameter ${name}.`);
  const state = operatorStateSchema.safeParse(params.get('state'));
  if (!state.success) throw invalid('state must be one of live, stuck, undelivered, mismatch, failed.');
  const query: OperatorQuery = { state: state.data, limit: 50, stuckAfterMs: settings.stuckAfterMs, undeliveredAfterMs: settings.undeliveredAfterMs };
  const principal = params.get('principal');
  if (principal !== null) {
    if (principal === '' || principal.length > 1024) throw invalid('principal must be 1 to 1024 characters.');
    query.principal = principal;
  }
  const conversation = params.get('conversation');
  if (conversation !== null) {
    if (!ID_PATTERN.test(conversation)) throw invalid('conversation must match ^[A-Za-z0-9_-]{1,128}$.');
    query.conversationId = conversation;
  }
  const since = params.get('since');
  if (since !== null) {
    const sinceMs = Date.parse(since);
    if (!Number.isFinite(sinceMs) || !/^\d{4}-\d{2}-\d{2}/.test(since)) throw invalid('since must be an ISO 8601 time.');
    query.sinceMs = sinceMs;
  }
  try {
    query.limit = parseLimit(url, 50, 500);
  } catch {
    throw invalid('limit must be an integer from 1 to 500.');
  }
  return query;
}

/** `GET /operator/turns?state=…` */
export async function listOperatorTurns(context: HandlerContext, settings: OperatorSettings, url: URL): Promise<Response> {
  const query = listQuery(url, settings);
  if (!context.log.listOperatorTurns) throw new HttpError(404, 'not_found', 'This turn log keeps no operator index.');
  const turns = await context.log.listOperatorTurns(query);
  if (query.state === 'stuck' || query.state === 'undelivered') context.metrics.listed(query.state, turns.map((turn) => turn.id));
  return jsonResponse(200, { turns: turns.map(operatorTurn) } satisfies OperatorListAnswer);
}

/** Any principal's turn: unknown `404`, retention removed `410`. */
async function anyTurn(context: HandlerContext, turnId: string): Promise<StoredTurn> {
  const turn = await context.log.getTurn(turnId);
  if (turn === undefined) throw new HttpError(404, 'turn_not_found', 'No such turn.');
  if (isExpiredTurn(turn)) throw new HttpError(410, 'turn_expired', 'The turn ended longer ago than the retention period; its log is gone.');
  return turn;
}

/** `GET /operator/turns/{id}?after=&limit=`: paged as in section 3. */
export async function showOperatorTurn(context: HandlerContext, url: URL, turnId: string): Promise<Response> {
  const after = resumePoint(null, url);
  const limit = parseLimit(url, 1000, 10_000);
  const before = await anyTurn(context, turnId);
  if (after > before.lastSeq) throw new HttpError(400, 'resume_point_ahead', `The resume point ${after} is beyond the last logged seq ${before.lastSeq}.`);
  const page = await context.log.read(turnId, after, limit);
  const turn = page.events.length > 0 ? await anyTurn(context, turnId) : before;
  return jsonResponse(200, { turn: operatorTurn(turn), events: page.events, hasMore: page.hasMore } satisfies OperatorShowAnswer);
}

async function readReason(request: Request): Promise<string> {
  const body = (await readSmallJson(request, 'invalid_body')) as { reason?: unknown } | null;
  const reason = body?.reason;
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > MAX_REASON) {
    throw new HttpError(400, 'invalid_body', `The body must be {"reason": "<1 to ${MAX_REASON} characters>"}.`);
  }
  return reason;
}

/** Waits for the turn to end, up to `ms`; answers the record as last read. */
async function awaitEnd(context: HandlerContext, turnId: string, ms: number, signal: AbortSignal): Promise<StoredTurn> {
  const deadline = context.now() + ms;
  for (;;) {
    const turn = await anyTurn(context, turnId);
    const remaining = deadline - context.now();
    if (isEnded(turn) || remaining <= 0 || signal.aborted) return turn;
    await context.log.waitForEvents(turnId, turn.lastSeq, { signal, timeoutMs: Math.min(remaining, 250) });
  }
}

/** No producer answered (its instance is gone, its lease not lapsed yet): the route logs the end itself. */
async function endHere(context: HandlerContext, turn: StoredTurn, reason: string): Promise<void> {
  let text = '';
  for (let after = 0, more = turn.lastSeq > 0; more; ) {
    const page = await context.log.read(turn.id, after, 10_000);
    for (const event of page.events) if (event.type === 'delta') text += event.text;
    after = page.events.at(-1)?.seq ?? after;
    more = page.hasMore && page.events.length > 0;
  }
  if (turn.lastSeq === 0) {
    await context.log.append(turn.id, { type: 'turn.start', messageId: turn.messageId, conversationId: turn.conversationId, createdAt: turn.createdAt });
  }
  await context.log.append(turn.id, {
    type: 'turn.end',
    status: 'failed',
    error: { code: 'ended_by_operator', message: reason },
    textLength: text.length,
    textSha256: await sha256Hex(text),
  });
}

/**
 * `POST /operator/turns/{id}/end` `{"reason"}`: a live turn ends `failed` / `ended_by_operator`.
 * The stop goes through the log, so the instance producing the turn stops it there (the
 * cancel path); this one stops it at once when it is its own.
 */
export async function endOperatorTurn(context: HandlerContext, settings: OperatorSettings, request: Request, turnId: string, operator: string): Promise<Response> {
  const reason = await readReason(request);
  const before = await anyTurn(context, turnId);
  if (isEnded(before)) return jsonResponse(200, { turn: operatorTurn(before) } satisfies OperatorEndAnswer);
  const { log, producer } = context;
  if (log.requestStop) await log.requestStop(turnId, { kind: 'operator', reason });
  else await log.requestCancel(turnId);
  producer.stop(turnId, { kind: 'operator', reason });
  let after = await awaitEnd(context, turnId, settings.endWaitMs, request.signal);
  if (!isEnded(after)) {
    await endHere(context, after, reason).catch((cause: unknown) => context.report(cause, { phase: 'store', turnId }));
    after = await anyTurn(context, turnId);
  }
  try {
    await settings.audit({ action: 'end', operator, turnId, principal: before.principal, reason, at: new Date(context.now()).toISOString(), before: before.status, after: after.status });
  } catch (cause) {
    context.report(cause, { phase: 'request', turnId });
  }
  return jsonResponse(200, { turn: operatorTurn(after) } satisfies OperatorEndAnswer);
}
