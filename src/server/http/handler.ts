import { MAX_SUBMIT_BYTES } from '../../protocol/schemas.js';
import type { Agent } from '../producer/agent.js';
import type { HandlerContext } from './handler-context.js';
import { DEFAULT_RETENTION_MS, createMemoryTurnLog } from '../log/memory/index.js';
import { TurnProducer, type ServerErrorReporter } from '../producer/producer.js';
import { checkId } from './request-parsing.js';
import { HttpError, RouteNotFound, errorResponse, jsonResponse } from './responses.js';
import { ALLOWED_METHOD, isOperatorPath, matchOperatorRoute, matchRoute, normalizeBasePath } from './routes.js';
import { submitMessage } from './submit.js';
import { CrossSitePolicy, type CorsOptions } from './cross-site.js';
import { DEFAULT_STORE_TIMEOUT_MS, guardStore } from './store-guard.js';
import { FeedHub } from './turn-feed.js';
import type { TurnLog } from '../log/turn-log.js';
import { cancelTurn, followTurn, listTurns, replayTurn } from './turn-routes.js';
import { deliveredTurn } from './delivered.js';
import { createServerMetrics, type MeterLike } from '../metrics.js';
import { operatorIdentity, type OperatorAuditEntry, type OperatorSettings } from './operator-access.js';
import { endOperatorTurn, listOperatorTurns, showOperatorTurn } from './operator-routes.js';

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
  /**
   * Idle time on a live stream before a heartbeat is sent, ms. Announced to clients in
   * the `Lifeline-Heartbeat` header of every stream, so they size their stall watchdog to
   * it. Default 1000 (protocol 1.2): a client's 2.5× watchdog then notices a silent stall
   * 2.5 s after the last byte, and with the Redis log's default 2 000 ms producer lease a
   * dead producer's turn ends `producer_lost` within about three heartbeats.
   */
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
  /**
   * Turns this instance produces at once; beyond it submissions answer `503 overloaded`
   * with `Retry-After`. Default 1000 (`Infinity` lifts the cap).
   */
  maxLiveTurns?: number;
  /** How often a live turn checks the store for a cancel requested through another instance, ms. Default 1000. */
  cancelPollMs?: number;
  /** Clock for timestamps (and the default store's retention), ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Failures handled without a client seeing the details (agent throws, store errors). Default `console.error`. */
  onError?: ServerErrorReporter;
  /**
   * Turns the operator API on (docs/protocol.md section 11) and names the operator: return
   * an identity (a non-empty string, given to `audit`); throw, reject or return nothing to
   * refuse. Separate from `authorize`: an operator sees every principal's turns. While
   * absent, and for every refused request, every `/operator` route answers `404 not_found`.
   * Default: absent (off).
   *
   * @example
   * authorizeOperator: (request) => {
   *   if (request.headers.get('authorization') !== `Bearer ${process.env.OPERATOR_TOKEN}`) throw new Error('no');
   *   return 'support';
   * }
   */
  authorizeOperator?: (request: Request) => string | Promise<string>;
  /** Receives every operator action that changed something, with the operator's identity. Default: `console.info` of the entry. */
  audit?: (entry: OperatorAuditEntry) => void | Promise<void>;
  /** A live turn with nothing logged for this long is listed `stuck`, ms. Default 60 000. */
  stuckAfterMs?: number;
  /** An ended turn with no receipt this long after its end is listed `undelivered`, ms. Default 60 000. */
  undeliveredAfterMs?: number;
  /**
   * An OpenTelemetry `Meter` (`metrics.getMeter('lifeline')` from `@opentelemetry/api`):
   * counters `lifeline.turns.started|completed|failed|stuck|undelivered` and the histogram
   * `lifeline.delivery.latency` (ms). Default: none (nothing is measured).
   */
  meter?: MeterLike;
  /**
   * Longest wait on one turn-log call while answering a request, ms; past it, or when the
   * log fails, the answer is `503 unavailable` with `Retry-After` (the client's outbox and
   * follower retry it). Default 2000.
   */
  storeTimeoutMs?: number;
  /**
   * Lets pages on other origins call the API (CORS): answers preflights and sets the
   * `Access-Control-*` headers for the origins named. With cookie auth, give
   * `credentials: true` and list the app's origins exactly. Without it, state-changing
   * routes refuse requests a browser marks as cross-site (`403 cross_site_request`).
   * Default: none (same-origin only).
   */
  cors?: CorsOptions;
  /**
   * Keeps a serverless function alive after its `202` until the turn's producer is done
   * (`turn.end` logged): given the producer's promise, once per accepted submission, before
   * the answer is sent. A long-lived server needs none. The promise never rejects. Default:
   * none. See docs/deploy.md for what each platform allows.
   *
   * @example
   * import { after } from 'next/server';                  // Next.js route handlers
   * createLifelineHandler({ agent, waitUntil: after });
   * // Vercel functions: `import { waitUntil } from '@vercel/functions'`;
   * // Cloudflare Workers: `import { waitUntil } from 'cloudflare:workers'`.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}

/** Options of {@link LifelineHandler.close}. */
export interface CloseOptions {
  /**
   * How long live turns may run on to their own end, ms, while new submissions answer
   * `503 shutting_down` with `Retry-After` (a client's outbox sends them again, through
   * the load balancer, to another instance) and followers keep streaming. Turns still
   * live after it end `failed` with `server_shutdown`. Default 0: end them at once.
   */
  drainMs?: number;
}

/** A Fetch-style request handler with a way to stop its producers. */
export interface LifelineHandler {
  (request: Request): Promise<Response>;
  /**
   * Drains, then stops: refuses new submissions (`503 shutting_down`, and `/healthz`
   * answers 503 so a load balancer stops sending), lets live turns finish for up to
   * `drainMs`, ends the rest `failed`/`server_shutdown`, and closes the store if the
   * handler created it. Follow streams keep working meanwhile; the server's own close
   * ends them (clients resume elsewhere).
   */
  close(options?: CloseOptions): Promise<void>;
}

const ANONYMOUS = 'anonymous';
/** The reference heartbeat (docs/protocol.md §2, since 1.2): a 2.5× client watchdog catches a stall 2.5 s after the last byte. */
export const DEFAULT_HEARTBEAT_MS = 1000;
/** Live turns one handler produces at once unless `maxLiveTurns` says otherwise. */
export const DEFAULT_MAX_LIVE_TURNS = 1000;

function reporter(options: LifelineHandlerOptions): ServerErrorReporter {
  return (
    options.onError ??
    ((error, context) => console.error(`[lifeline] ${context.phase} error${context.turnId ? ` in turn ${context.turnId}` : ''}:`, error))
  );
}

/** The operator API's settings; `undefined` (off) without `authorizeOperator`. */
function operatorSettings(options: LifelineHandlerOptions): OperatorSettings | undefined {
  const { authorizeOperator } = options;
  if (!authorizeOperator) return undefined;
  return {
    authorize: authorizeOperator,
    audit: options.audit ?? ((entry) => console.info('[lifeline] operator', JSON.stringify(entry))),
    stuckAfterMs: options.stuckAfterMs ?? 60_000,
    undeliveredAfterMs: options.undeliveredAfterMs ?? 60_000,
    // Long enough for the producing instance to poll its cancel key a few times.
    endWaitMs: Math.max(5000, 3 * (options.cancelPollMs ?? 1000)),
  };
}

/** Resolves the options into what the routes share. */
function handlerContext(options: LifelineHandlerOptions, log: TurnLog): HandlerContext {
  const report = reporter(options);
  const metrics = createServerMetrics(options.meter);
  const producer = new TurnProducer({
    // The producer appends through the log itself: an append may take its time through a failover.
    log,
    agent: options.agent,
    limits: {
      maxEventsPerTurn: options.maxEventsPerTurn ?? 1_000_000,
      maxTextPerTurn: options.maxTextPerTurn ?? 8 * 1024 * 1024,
      maxEventSize: options.maxEventSize ?? 256 * 1024,
    },
    cancelPollMs: options.cancelPollMs ?? 1000,
    report,
    metrics,
  });
  const guarded = guardStore(log, options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, report);
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  return {
    log: guarded,
    feeds: new FeedHub(guarded, heartbeatMs, (error) => report(error, { phase: 'store' })),
    producer,
    accepting: true,
    now: options.now ?? Date.now,
    heartbeatMs,
    retryMs: options.retryMs ?? 1000,
    maxBodyBytes: options.maxBodyBytes ?? MAX_SUBMIT_BYTES,
    maxLiveTurns: options.maxLiveTurns ?? DEFAULT_MAX_LIVE_TURNS,
    crossSite: new CrossSitePolicy(options.cors),
    report,
    metrics,
    operator: operatorSettings(options),
    waitUntil: options.waitUntil,
  };
}

/** The caller's principal, or the documented 401/403. */
async function authorize(options: LifelineHandlerOptions, request: Request): Promise<string> {
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

/** The readiness answer for load balancers: 200 while this instance takes turns and its log answers. */
async function healthz(context: HandlerContext): Promise<Response> {
  if (!context.accepting) throw shuttingDown();
  await context.log.ping?.();
  return jsonResponse(200, { status: 'ok' });
}

function shuttingDown(): HttpError {
  return new HttpError(503, 'shutting_down', 'This server instance is shutting down; try again shortly.', { 'retry-after': '1' });
}

/** Matches the route and method, authorizes, checks the id, and hands over to the route. */
async function route(context: HandlerContext, options: LifelineHandlerOptions, basePath: string, request: Request): Promise<Response> {
  const url = new URL(request.url);
  let path = url.pathname;
  if (basePath !== '') {
    if (!path.startsWith(`${basePath}/`)) throw new RouteNotFound();
    path = path.slice(basePath.length);
  }
  if (isOperatorPath(path)) return operatorRoute(context, request, url, path);
  const matched = matchRoute(path);
  if (!matched) throw new RouteNotFound();
  const allowed = ALLOWED_METHOD[matched.kind];
  // HEAD is GET without the body (the caller drops it).
  const method = request.method === 'HEAD' && allowed === 'GET' ? 'GET' : request.method;
  if (method !== allowed) {
    throw new HttpError(405, 'method_not_allowed', `Use ${allowed} on this route.`, { allow: allowed === 'GET' ? 'GET, HEAD' : allowed });
  }
  context.crossSite.check(request);
  if (matched.kind === 'healthz') return healthz(context);
  const principal = await authorize(options, request);
  switch (matched.kind) {
    case 'submit':
      checkId(matched.conversationId, 'conversation id');
      if (!context.accepting) throw shuttingDown();
      return submitMessage(context, request, matched.conversationId, principal);
    case 'list':
      checkId(matched.conversationId, 'conversation id');
      return listTurns(context, url, matched.conversationId, principal);
    case 'follow':
      checkId(matched.turnId, 'turn id');
      return followTurn(context, request, url, matched.turnId, principal);
    case 'replay':
      checkId(matched.turnId, 'turn id');
      return replayTurn(context, url, matched.turnId, principal);
    case 'cancel':
      checkId(matched.turnId, 'turn id');
      return cancelTurn(context, matched.turnId, principal);
    case 'delivered':
      checkId(matched.turnId, 'turn id');
      return deliveredTurn(context, request, matched.turnId, principal);
  }
}

/** Below `/operator`: the operator's consent comes first, so nothing there answers anything but 404 without it. */
async function operatorRoute(context: HandlerContext, request: Request, url: URL, path: string): Promise<Response> {
  const operator = await operatorIdentity(context.operator, request);
  const settings = context.operator!;
  const matched = matchOperatorRoute(path);
  if (!matched) throw new RouteNotFound();
  const allowed = ALLOWED_METHOD[matched.kind];
  if (request.method !== allowed) throw new HttpError(405, 'method_not_allowed', `Use ${allowed} on this route.`, { allow: allowed });
  if (matched.kind === 'operator-list') return listOperatorTurns(context, settings, url);
  checkId(matched.turnId, 'turn id');
  if (matched.kind === 'operator-show') return showOperatorTurn(context, url, matched.turnId);
  return endOperatorTurn(context, settings, request, matched.turnId, operator);
}

/** The answer to one request, typed errors included, before CORS headers and HEAD. */
async function answer(context: HandlerContext, options: LifelineHandlerOptions, basePath: string, request: Request): Promise<Response> {
  try {
    return context.crossSite.preflight(request) ?? (await route(context, options, basePath, request));
  } catch (cause) {
    if (cause instanceof RouteNotFound) return cause.toHintedResponse(basePath, new URL(request.url).pathname);
    if (cause instanceof HttpError) return cause.toResponse();
    // A client that went away mid-request is not a server failure; nobody reads this answer.
    if (!request.signal.aborted) context.report(cause, { phase: 'request' });
    return errorResponse(500, 'internal_error', 'The server failed to handle this request.');
  }
}

/**
 * Creates the reference server: one Fetch-style handler for every route of
 * docs/protocol.md. Mount it anywhere that speaks `Request`/`Response` (Node via
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
  const ownsStore = options.store === undefined;
  const log = options.store ?? createMemoryTurnLog({ retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS, now: options.now ?? Date.now });
  const context = handlerContext(options, log);
  const basePath = normalizeBasePath(options.basePath ?? '');
  const handler = async (request: Request): Promise<Response> => {
    const response = context.crossSite.decorate(request, await answer(context, options, basePath, request));
    if (request.method !== 'HEAD' || response.body === null) return response;
    await response.body.cancel();
    return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  let closing: Promise<void> | undefined;
  return Object.assign(handler, {
    close(closeOptions: CloseOptions = {}): Promise<void> {
      context.accepting = false;
      closing ??= (async () => {
        await context.producer.drain(closeOptions.drainMs ?? 0);
        if (ownsStore) await log.close();
      })();
      return closing;
    },
  });
}
