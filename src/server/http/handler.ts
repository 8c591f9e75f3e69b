import { MAX_SUBMIT_BYTES } from '../../protocol/schemas.js';
import type { HandlerContext } from './handler-context.js';
import { DEFAULT_RETENTION_MS, createMemoryTurnLog } from '../log/memory/index.js';
import { TurnProducer, type ServerErrorReporter } from '../producer/producer.js';
import { checkId } from './request-parsing.js';
import { HttpError, RouteNotFound, errorResponse, jsonResponse } from './responses.js';
import { ALLOWED_METHOD, isOperatorPath, matchOperatorRoute, matchRoute, normalizeBasePath } from './routes.js';
import { submitMessage } from './submit.js';
import { CrossSitePolicy } from './cross-site.js';
import { DEFAULT_STORE_TIMEOUT_MS, guardStore } from './store-guard.js';
import { FeedHub } from './turn-feed.js';
import { ReplayCache } from './replay-cache.js';
import type { TurnLog } from '../log/turn-log.js';
import { cancelTurn, followTurn, listTurns, replayTurn } from './turn-routes.js';
import { deliveredTurn } from './delivered.js';
import { createServerMetrics } from '../metrics.js';
import { operatorIdentity, type OperatorSettings } from './operator-access.js';
import { endOperatorTurn, listOperatorTurns, showOperatorTurn } from './operator-routes.js';

import type { CloseOptions, LifelineHandler, LifelineHandlerOptions } from './handler-options.js';

export type { CloseOptions, LifelineHandler, LifelineHandlerOptions } from './handler-options.js';

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
    replays: new ReplayCache(),
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
