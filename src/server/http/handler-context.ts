import type { TurnProducer, ServerErrorReporter } from '../producer/producer.js';
import type { TurnLog } from '../log/turn-log.js';

/** What every route of the handler works with, resolved once from the options. */
export interface HandlerContext {
  log: TurnLog;
  producer: TurnProducer;
  now: () => number;
  heartbeatMs: number;
  retryMs: number;
  maxBodyBytes: number;
  maxLiveTurns: number;
  report: ServerErrorReporter;
}
