import type { TurnProducer, ServerErrorReporter } from '../producer/producer.js';
import type { TurnLog } from '../log/turn-log.js';
import type { ServerMetrics } from '../metrics.js';
import type { OperatorSettings } from './operator-access.js';
import type { CrossSitePolicy } from './cross-site.js';
import type { FeedHub } from './turn-feed.js';
import type { ReplayCache } from './replay-cache.js';

/** What every route of the handler works with, resolved once from the options. */
export interface HandlerContext {
  /** The log as routes see it: every call bounded, failures a typed 503 (store-guard.ts). */
  log: TurnLog;
  producer: TurnProducer;
  /** False once `close()` began: submissions and `/healthz` answer `503 shutting_down`. */
  accepting: boolean;
  crossSite: CrossSitePolicy;
  /** One log reader per followed turn on this instance, shared by its followers. */
  feeds: FeedHub;
  /** Serialised replay pages of ended turns (replay-cache.ts). */
  replays: ReplayCache;
  now: () => number;
  heartbeatMs: number;
  retryMs: number;
  maxBodyBytes: number;
  maxLiveTurns: number;
  report: ServerErrorReporter;
  metrics: ServerMetrics;
  /** Keeps a serverless invocation alive until a turn's producer is done; `undefined` on a long-lived server. */
  waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  /** The operator API's settings; `undefined` while it is off (every `/operator` route answers 404). */
  operator: OperatorSettings | undefined;
}
