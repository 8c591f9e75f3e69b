/**
 * The reference server with the conformance agent, on 127.0.0.1 (base `/api`), fast
 * timings for tests, and optionally one of the {@link breakages} wrapped around it.
 */
import { conformanceAgent } from '../../../src/server/producer/conformance-agent.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { serve } from '../../../src/server/node/index.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import type { ConformanceOptions } from '../../../src/conformance/index.js';
import type { Breakage } from './breakages.js';

/** Heartbeat interval of the test server, ms. */
export const HEARTBEAT_MS = 100;

/** Suite options for the test server: a short quiet pause, bounded waits. */
export const FAST: Omit<ConformanceOptions, 'baseUrl'> = { pauseMs: 350, holdMs: 10_000, timeoutMs: 5000, turnTimeoutMs: 10_000, operatorHeaders: { authorization: 'Bearer conformance-operator' } };

export interface ConformanceServer {
  baseUrl: string;
  /** Errors the handler reported (agent failures are expected: the suite scripts one). */
  errors: unknown[];
  close(): Promise<void>;
}

export interface ConformanceServerOptions {
  store?: TurnLog;
  breakage?: Breakage;
  authorize?: (request: Request) => string | Promise<string>;
  /** Default: the conformance agent. */
  agent?: Agent;
}

export async function startConformanceServer(options: ConformanceServerOptions = {}): Promise<ConformanceServer> {
  const errors: unknown[] = [];
  const handler = createLifelineHandler({
    agent: options.agent ?? conformanceAgent(),
    basePath: '/api',
    heartbeatMs: HEARTBEAT_MS,
    onError: (error) => errors.push(error),
    cancelPollMs: 50,
    authorizeOperator: (request) => {
      if (request.headers.get('authorization') !== 'Bearer conformance-operator') throw new Error('not an operator');
      return 'conformance-operator';
    },
    audit: () => undefined,
    ...(options.store ? { store: options.store } : {}),
    ...(options.authorize ? { authorize: options.authorize } : {}),
  });
  const { breakage } = options;
  const served = await serve(breakage ? (request) => breakage(request, handler) : handler, { onError: (error) => errors.push(error) });
  return {
    baseUrl: `${served.url}/api`,
    errors,
    async close() {
      await handler.close();
      await served.close();
    },
  };
}
