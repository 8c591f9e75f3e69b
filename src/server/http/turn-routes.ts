import type { CancelAnswer, ListAnswer, ReplayAnswer, TurnObject } from '../../protocol/schemas.js';
import { createFollowStream } from './follow-stream.js';
import type { HandlerContext } from './handler-context.js';
import { parseLimit, resumePoint } from './request-parsing.js';
import { HttpError, JSON_HEADERS, jsonResponse } from './responses.js';
import { isExpiredTurn, type StoredTurn } from '../log/turn-log.js';

const LIVE_STATUSES = new Set(['pending', 'streaming']);
const DEFAULT_REPLAY_LIMIT = 1000;
const MAX_REPLAY_LIMIT = 10_000;
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 200;

/** The wire view of a stored turn: no principal, no internal bookkeeping. */
export function turnObject(turn: StoredTurn): TurnObject {
  return {
    id: turn.id,
    conversationId: turn.conversationId,
    messageId: turn.messageId,
    status: turn.status,
    lastSeq: turn.lastSeq,
    createdAt: turn.createdAt,
    updatedAt: turn.updatedAt,
    content: turn.content,
    delivery: turn.delivery ?? { state: 'pending' },
    ...(turn.continues !== undefined && { continues: turn.continues }),
  };
}

export function isEnded(turn: StoredTurn): boolean {
  return turn.endedAt !== undefined || !LIVE_STATUSES.has(turn.status);
}

/** A turn visible to `principal`; another principal's turn is unknown in every state, expired included (§8). */
export async function visibleTurn(context: HandlerContext, turnId: string, principal: string): Promise<StoredTurn> {
  const turn = await context.log.getTurn(turnId);
  if (turn === undefined || turn.principal !== principal) throw new HttpError(404, 'turn_not_found', 'No such turn.');
  if (isExpiredTurn(turn)) throw new HttpError(410, 'turn_expired', 'The turn ended longer ago than the retention period; its log is gone.');
  return turn;
}

function checkNotAhead(after: number, turn: StoredTurn): void {
  if (after > turn.lastSeq) {
    throw new HttpError(400, 'resume_point_ahead', `The resume point ${after} is beyond the last logged seq ${turn.lastSeq}; replay from 0.`);
  }
}

/** `GET /turns/{id}/events` (section 2). */
export async function followTurn(context: HandlerContext, request: Request, url: URL, turnId: string, principal: string): Promise<Response> {
  const after = resumePoint(request.headers.get('last-event-id'), url);
  const turn = await visibleTurn(context, turnId, principal);
  checkNotAhead(after, turn);
  if (isEnded(turn) && after >= turn.lastSeq) return new Response(null, { status: 204 });
  if (after > 0 && !isEnded(turn)) context.metrics.resumed();
  const { log, feeds, retryMs, heartbeatMs } = context;
  const body = createFollowStream({ log, feeds, turnId, after, retryMs, signal: request.signal });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      // 1.1: lets a client size its stall watchdog to this server's heartbeat.
      'lifeline-heartbeat': String(heartbeatMs),
    },
  });
}

/**
 * `GET /turns/{id}` (section 3): one page, bounded by `limit` and by the log's page bytes.
 * An ended turn's pages no longer change: they come from the replay cache, serialised
 * once, and its record is read once (nothing newer can be in the page).
 */
export async function replayTurn(context: HandlerContext, url: URL, turnId: string, principal: string): Promise<Response> {
  const after = resumePoint(null, url);
  const limit = parseLimit(url, DEFAULT_REPLAY_LIMIT, MAX_REPLAY_LIMIT);
  const before = await visibleTurn(context, turnId, principal);
  checkNotAhead(after, before);
  if (before.endedAt !== undefined) {
    const page = context.replays.get(turnId, after, limit) ?? context.replays.put(turnId, after, limit, await context.log.read(turnId, after, limit));
    // The same text JSON.stringify gives for the whole answer (keys in ReplayAnswer's order), the events serialised once.
    const body = `{"turn":${JSON.stringify(turnObject(before))},"events":${page.eventsJson},"hasMore":${page.hasMore}}`;
    return new Response(body, { status: 200, headers: JSON_HEADERS });
  }
  const page = await context.log.read(turnId, after, limit);
  // Read the turn again so its lastSeq and status cover every event returned.
  const turn = page.events.length > 0 ? await visibleTurn(context, turnId, principal) : before;
  const answer: ReplayAnswer = { turn: turnObject(turn), events: page.events, hasMore: page.hasMore };
  return jsonResponse(200, answer);
}

/** `GET /conversations/{id}/turns` (section 4). */
export async function listTurns(context: HandlerContext, url: URL, conversationId: string, principal: string): Promise<Response> {
  const limit = parseLimit(url, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
  const turns = await context.log.listTurns(conversationId, principal, limit);
  const answer: ListAnswer = { turns: turns.map(turnObject) };
  return jsonResponse(200, answer);
}

/** `POST /turns/{id}/cancel` (section 5). */
export async function cancelTurn(context: HandlerContext, turnId: string, principal: string): Promise<Response> {
  const turn = await visibleTurn(context, turnId, principal);
  if (isEnded(turn)) return jsonResponse(200, { turn: turnObject(turn) } satisfies CancelAnswer);
  await context.log.requestCancel(turnId);
  context.producer.stop(turnId, 'cancel');
  return jsonResponse(202, { turn: turnObject(turn) } satisfies CancelAnswer);
}
