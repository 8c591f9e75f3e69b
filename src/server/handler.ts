import { nanoid } from 'nanoid';
import {
  ID_PATTERN,
  IDEMPOTENCY_KEY_PATTERN,
  MAX_SUBMIT_BYTES,
  RESUME_POINT_PATTERN,
  submitBodySchema,
  type CancelAnswer,
  type ListAnswer,
  type ReplayAnswer,
  type SubmitAnswer,
  type TurnObject,
} from '../protocol/schemas.js';
import type { Agent } from './agent.js';
import { submissionFingerprint } from './canonical-json.js';
import { createFollowStream } from './follow-stream.js';
import { DEFAULT_RETENTION_MS, createMemoryTurnLog } from './memory-turn-log.js';
import { TurnProducer, type ServerErrorReporter } from './producer.js';
import { HttpError, errorResponse, jsonResponse } from './responses.js';
import { isExpiredTurn, type StoredTurn, type TurnLog } from './turn-log.js';

/** Options of {@link createLifelineHandler}. */
export interface LifelineHandlerOptions {
  /** Produces each turn's events. */
  agent: Agent;
  /** Where turns are logged. Default: a new {@link createMemoryTurnLog} (one process only). */
  store?: TurnLog;
  /**
   * Names the caller. Return a principal (a non-empty string); throw or reject to answer
   * `401 unauthorized`, or throw something with `status: 403` to answer `403 forbidden`.
   * Turns and idempotency keys are scoped to their principal: another principal's turn
   * answers `404 turn_not_found`, exactly like an unknown one. Default: everyone is
   * `'anonymous'`.
   */
  authorize?: (request: Request) => string | Promise<string>;
  /** Idle time on a live stream before a heartbeat is sent, ms. Default 10 000. */
  heartbeatMs?: number;
  /** The SSE `retry:` value sent first on every stream, ms. Default 1000. */
  retryMs?: number;
  /** Retention of ended turns for the default memory store, ms. Default 24 h. Ignored when `store` is given. */
  retentionMs?: number;
  /** Path prefix of every route, e.g. `/api`. Default `''`. */
  basePath?: string;
  /** Largest submit body, bytes. Default 65 536 (the protocol's limit). */
  maxBodyBytes?: number;
  /** Largest number of events in one turn, turn.start and turn.end included. Default 1 000 000. */
  maxEventsPerTurn?: number;
  /** Largest assistant text of one turn, UTF-16 code units. Default 8 Mi (clients accept 16 Mi). */
  maxTextPerTurn?: number;
  /** Largest JSON data of one event, UTF-16 code units. Default 256 Ki (clients accept 1 Mi). */
  maxEventSize?: number;
  /** Turns this instance produces at once; beyond it submissions answer `503 overloaded`. Default unlimited. */
  maxLiveTurns?: number;
  /** How often a live turn checks the store for a cancel requested through another instance, ms. Default 1000. */
  cancelPollMs?: number;
  /** Clock for timestamps (and the default store's retention), ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Failures handled without a client seeing the details (agent throws, store errors). Default `console.error`. */
  onError?: ServerErrorReporter;
}

/** A Fetch-style request handler with a way to stop its producers. */
export interface LifelineHandler {
  (request: Request): Promise<Response>;
  /**
   * Stops every turn this handler is producing (each ends `failed` with code
   * `server_shutdown`) and closes the store if the handler created it.
   */
  close(): Promise<void>;
}

const ANONYMOUS = 'anonymous';
const LIVE_STATUSES = new Set(['pending', 'streaming']);
const DEFAULT_REPLAY_LIMIT = 1000;
const MAX_REPLAY_LIMIT = 10_000;
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 200;
/** Message content deeper than this is refused: validating it would only risk the stack. */
const MAX_CONTENT_DEPTH = 64;
const POISON_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

type Route =
  | { kind: 'submit'; conversationId: string }
  | { kind: 'list'; conversationId: string }
  | { kind: 'follow'; turnId: string }
  | { kind: 'replay'; turnId: string }
  | { kind: 'cancel'; turnId: string };

const ALLOWED: Record<Route['kind'], string> = { submit: 'POST', list: 'GET', follow: 'GET', replay: 'GET', cancel: 'POST' };

function normalizeBasePath(basePath: string): string {
  if (basePath === '' || basePath === '/') return '';
  const withSlash = basePath.startsWith('/') ? basePath : `/${basePath}`;
  return withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}

function matchRoute(path: string): Route | undefined {
  const parts = path.split('/');
  if (parts[0] !== '') return undefined;
  const [, collection, id, action] = parts;
  // An empty segment names nothing: `/turns/` is no route, while `/turns/a.b` is a route with a bad id.
  if (id === undefined || id === '' || action === '') return undefined;
  if (parts.length === 3 && collection === 'turns') return { kind: 'replay', turnId: id };
  if (parts.length !== 4) return undefined;
  if (collection === 'conversations' && action === 'messages') return { kind: 'submit', conversationId: id };
  if (collection === 'conversations' && action === 'turns') return { kind: 'list', conversationId: id };
  if (collection === 'turns' && action === 'events') return { kind: 'follow', turnId: id };
  if (collection === 'turns' && action === 'cancel') return { kind: 'cancel', turnId: id };
  return undefined;
}

function checkId(id: string, what: string): void {
  if (!ID_PATTERN.test(id)) throw new HttpError(400, 'invalid_id', `The ${what} must match ^[A-Za-z0-9_-]{1,128}$.`);
}

/** A resume point: 1–15 decimal digits and nothing else. */
function parseResumePoint(value: string, source: string): number {
  if (!RESUME_POINT_PATTERN.test(value)) {
    throw new HttpError(400, 'invalid_resume_point', `${source} must be 1 to 15 decimal digits.`);
  }
  return Number(value);
}

/** Header `Last-Event-ID` (follow only) wins over query `after`; neither means 0. */
function resumePoint(header: string | null, url: URL): number {
  if (header !== null) return parseResumePoint(header, 'Last-Event-ID');
  const query = url.searchParams.get('after');
  if (query !== null) return parseResumePoint(query, 'The after parameter');
  return 0;
}

function parseLimit(url: URL, fallback: number, max: number): number {
  const raw = url.searchParams.get('limit');
  if (raw === null) return fallback;
  const value = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= max)) throw new HttpError(400, 'invalid_limit', `limit must be an integer from 1 to ${max}.`);
  return value;
}

/** The wire view of a stored turn: no principal, no internal bookkeeping. */
function turnObject(turn: StoredTurn): TurnObject {
  return {
    id: turn.id,
    conversationId: turn.conversationId,
    messageId: turn.messageId,
    status: turn.status,
    lastSeq: turn.lastSeq,
    createdAt: turn.createdAt,
    updatedAt: turn.updatedAt,
    content: turn.content,
  };
}

function isEnded(turn: StoredTurn): boolean {
  return turn.endedAt !== undefined || !LIVE_STATUSES.has(turn.status);
}

/** Reads at most `max` bytes of body; `undefined` when it is larger. */
async function readBody(request: Request, max: number): Promise<Uint8Array | undefined> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^[0-9]+$/.test(declared) && Number(declared) > max) return undefined;
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** Refuses keys that reach a prototype when copied naively, and absurd nesting. */
function checkContentShape(value: unknown, depth = 0): void {
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_CONTENT_DEPTH) throw new HttpError(400, 'invalid_body', `content is nested deeper than ${MAX_CONTENT_DEPTH} levels.`);
  if (Array.isArray(value)) {
    for (const item of value) checkContentShape(item, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    if (POISON_KEYS.has(key)) throw new HttpError(400, 'invalid_body', `content may not contain the key "${key}".`);
    checkContentShape((value as Record<string, unknown>)[key], depth + 1);
  }
}

function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const type = value.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * Creates the reference server: one Fetch-style handler for every route of
 * PROTOCOL.md. Mount it anywhere that speaks `Request`/`Response` (Node via
 * `toNodeListener`/`serve`, Hono, Next.js route handlers, Deno, Bun).
 *
 * @example
 * const handler = createLifelineHandler({
 *   basePath: '/api',
 *   agent: async function* ({ content }) {
 *     yield { type: 'delta', text: 'Hello' };
 *   },
 * });
 * await serve(handler, { port: 8787 });
 */
export function createLifelineHandler(options: LifelineHandlerOptions): LifelineHandler {
  const now = options.now ?? Date.now;
  const ownsStore = options.store === undefined;
  const log = options.store ?? createMemoryTurnLog({ retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS, now });
  const basePath = normalizeBasePath(options.basePath ?? '');
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const retryMs = options.retryMs ?? 1000;
  const maxBodyBytes = options.maxBodyBytes ?? MAX_SUBMIT_BYTES;
  const maxLiveTurns = options.maxLiveTurns ?? Number.POSITIVE_INFINITY;
  const report: ServerErrorReporter =
    options.onError ?? ((error, context) => console.error(`[lifeline] ${context.phase} error${context.turnId ? ` in turn ${context.turnId}` : ''}:`, error));
  const producer = new TurnProducer({
    log,
    agent: options.agent,
    limits: {
      maxEventsPerTurn: options.maxEventsPerTurn ?? 1_000_000,
      maxTextPerTurn: options.maxTextPerTurn ?? 8 * 1024 * 1024,
      maxEventSize: options.maxEventSize ?? 256 * 1024,
    },
    cancelPollMs: options.cancelPollMs ?? 1000,
    report,
  });

  async function authorize(request: Request): Promise<string> {
    if (!options.authorize) return ANONYMOUS;
    let principal: unknown;
    try {
      principal = await options.authorize(request);
    } catch (cause) {
      const status = (cause as { status?: unknown } | null)?.status;
      if (status === 403) throw new HttpError(403, 'forbidden', 'Not allowed.');
      throw new HttpError(401, 'unauthorized', 'Authentication required.');
    }
    if (typeof principal !== 'string' || principal === '') throw new HttpError(401, 'unauthorized', 'Authentication required.');
    return principal;
  }

  /** A turn visible to `principal`; others' turns look unknown. */
  async function visibleTurn(turnId: string, principal: string): Promise<StoredTurn> {
    const turn = await log.getTurn(turnId);
    // Another principal's turn is unknown in every state, expired included (PROTOCOL §8).
    if (turn === undefined || turn.principal !== principal) throw new HttpError(404, 'turn_not_found', 'No such turn.');
    if (isExpiredTurn(turn)) throw new HttpError(410, 'turn_expired', 'The turn ended longer ago than the retention period; its log is gone.');
    return turn;
  }

  async function submit(request: Request, conversationId: string, principal: string): Promise<Response> {
    const key = request.headers.get('idempotency-key');
    if (key === null || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
      throw new HttpError(400, 'invalid_idempotency_key', 'Idempotency-Key is required: 16 to 128 characters of [A-Za-z0-9_-].');
    }
    // PROTOCOL.md's submit table has no 415: a body declared as something other than JSON
    // is a malformed request (400), which also refuses cross-site form posts.
    if (!isJsonContentType(request.headers.get('content-type'))) {
      throw new HttpError(400, 'unsupported_media_type', 'Content-Type must be application/json.');
    }
    const bytes = await readBody(request, maxBodyBytes);
    if (bytes === undefined) throw new HttpError(413, 'payload_too_large', `The body exceeds ${maxBodyBytes} bytes.`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch {
      throw new HttpError(400, 'invalid_json', 'The body is not valid UTF-8 JSON.');
    }
    checkContentShape(parsed);
    const body = submitBodySchema.safeParse(parsed);
    if (!body.success) throw new HttpError(400, 'invalid_body', 'The body must be {"content": <string or JSON object>}.');
    const fingerprint = await submissionFingerprint(conversationId, parsed);

    const createdAt = new Date(now()).toISOString();
    const existing = await log.putIdempotencyIfAbsent(principal, key, { fingerprint, state: 'in_flight', createdAt });
    if (existing) {
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

    let turn: StoredTurn;
    try {
      if (producer.liveCount >= maxLiveTurns) {
        throw new HttpError(503, 'overloaded', 'Too many turns in progress; try again shortly.', { 'retry-after': '1' });
      }
      turn = await log.createTurn({ id: nanoid(), conversationId, messageId: nanoid(), principal, content: body.data.content, createdAt });
      await log.completeIdempotency(principal, key, {
        fingerprint,
        state: 'done',
        turnId: turn.id,
        messageId: turn.messageId,
        conversationId,
        createdAt,
      });
    } catch (cause) {
      // Free the key so the client's retry can create the turn.
      await log.deleteIdempotency(principal, key).catch((error: unknown) => report(error, { phase: 'store' }));
      throw cause;
    }
    producer.start(turn, body.data.content);
    const answer: SubmitAnswer = { turnId: turn.id, messageId: turn.messageId, conversationId, status: 'pending' };
    return jsonResponse(202, answer);
  }

  async function follow(request: Request, url: URL, turnId: string, principal: string): Promise<Response> {
    const after = resumePoint(request.headers.get('last-event-id'), url);
    const turn = await visibleTurn(turnId, principal);
    if (after > turn.lastSeq) {
      throw new HttpError(400, 'resume_point_ahead', `The resume point ${after} is beyond the last logged seq ${turn.lastSeq}; replay from 0.`);
    }
    if (isEnded(turn) && after >= turn.lastSeq) return new Response(null, { status: 204 });
    const body = createFollowStream({ log, turnId, after, retryMs, heartbeatMs, signal: request.signal });
    return new Response(body, {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
    });
  }

  async function replay(url: URL, turnId: string, principal: string): Promise<Response> {
    const after = resumePoint(null, url);
    const limit = parseLimit(url, DEFAULT_REPLAY_LIMIT, MAX_REPLAY_LIMIT);
    const before = await visibleTurn(turnId, principal);
    if (after > before.lastSeq) {
      throw new HttpError(400, 'resume_point_ahead', `after=${after} is beyond the last logged seq ${before.lastSeq}; replay from 0.`);
    }
    const page = await log.read(turnId, after, limit);
    // Read the turn again so its lastSeq and status cover every event returned.
    const turn = page.events.length > 0 ? await visibleTurn(turnId, principal) : before;
    const answer: ReplayAnswer = { turn: turnObject(turn), events: page.events, hasMore: page.hasMore };
    return jsonResponse(200, answer);
  }

  async function list(url: URL, conversationId: string, principal: string): Promise<Response> {
    const limit = parseLimit(url, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const turns = await log.listTurns(conversationId, principal, limit);
    const answer: ListAnswer = { turns: turns.map(turnObject) };
    return jsonResponse(200, answer);
  }

  async function cancel(turnId: string, principal: string): Promise<Response> {
    const turn = await visibleTurn(turnId, principal);
    if (isEnded(turn)) return jsonResponse(200, { turn: turnObject(turn) } satisfies CancelAnswer);
    await log.requestCancel(turnId);
    producer.stop(turnId, 'cancel');
    return jsonResponse(202, { turn: turnObject(turn) } satisfies CancelAnswer);
  }

  async function route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    let path = url.pathname;
    if (basePath !== '') {
      if (!path.startsWith(`${basePath}/`)) throw new HttpError(404, 'not_found', 'No such route.');
      path = path.slice(basePath.length);
    }
    const matched = matchRoute(path);
    if (!matched) throw new HttpError(404, 'not_found', 'No such route.');
    const allowed = ALLOWED[matched.kind];
    if (request.method !== allowed) {
      throw new HttpError(405, 'method_not_allowed', `Use ${allowed} on this route.`, { allow: allowed });
    }
    const principal = await authorize(request);
    switch (matched.kind) {
      case 'submit':
        checkId(matched.conversationId, 'conversation id');
        return submit(request, matched.conversationId, principal);
      case 'list':
        checkId(matched.conversationId, 'conversation id');
        return list(url, matched.conversationId, principal);
      case 'follow':
        checkId(matched.turnId, 'turn id');
        return follow(request, url, matched.turnId, principal);
      case 'replay':
        checkId(matched.turnId, 'turn id');
        return replay(url, matched.turnId, principal);
      case 'cancel':
        checkId(matched.turnId, 'turn id');
        return cancel(matched.turnId, principal);
    }
  }

  const handler = async (request: Request): Promise<Response> => {
    try {
      return await route(request);
    } catch (cause) {
      if (cause instanceof HttpError) return cause.toResponse();
      // A client that went away mid-request is not a server failure; nobody reads this answer.
      if (!request.signal.aborted) report(cause, { phase: 'request' });
      return errorResponse(500, 'internal_error', 'The server failed to handle this request.');
    }
  };
  return Object.assign(handler, {
    async close(): Promise<void> {
      await producer.stopAll();
      if (ownsStore) await log.close();
    },
  });
}
