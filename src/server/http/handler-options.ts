import type { Agent } from '../producer/agent.js';
import type { ServerErrorReporter } from '../producer/producer.js';
import type { TurnLog } from '../log/turn-log.js';
import type { MeterLike } from '../metrics.js';
import type { CorsOptions } from './cross-site.js';
import type { OperatorAuditEntry } from './operator-access.js';

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
   * An OpenTelemetry `Meter` (`metrics.getMeter('lifeline-chat')` from `@opentelemetry/api`):
   * counters `lifeline.turns.started|completed|failed|stuck|undelivered` (stuck and undelivered:
   * turns operator listings found, each once per instance), `lifeline.streams.resumed` (follow
   * requests resuming a live turn from a seq > 0: a client whose stream was lost) and the
   * histogram `lifeline.delivery.latency` (ms from turn.end to the first receipt). Default: none
   * (nothing is measured).
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
