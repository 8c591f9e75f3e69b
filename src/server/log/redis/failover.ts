import { setTimeout as delay } from 'node:timers/promises';
import type { RedisContext } from './context.js';

/** Errors of a node that went away or is changing roles: the same command may work a moment later. */
const TRANSIENT = /Connection is closed|Too many Cluster redirections|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|LOADING|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Command timed out/;

/**
 * Runs an idempotent step again while it fails transiently, for at most one producer
 * lease (the lease cannot be renewed through the outage either). A cluster failover
 * takes about the cluster's node timeout; a client's own redirection budget is often
 * shorter, and a producer whose write failed would end its turn `store_failed`
 * (docs/faults.md). Every write of a producer's append goes through here: the append
 * itself, and the steps in other slots beside it (indexes, TTLs), since any one of them
 * failing fails the append.
 */
export function runThroughFailover<T>(ctx: RedisContext, step: (attempt: number) => Promise<T>): Promise<T> {
  const deadline = Date.now() + ctx.leaseMs;
  // The first attempt without an async frame of its own: every append of every turn takes it.
  let first: Promise<T>;
  try {
    first = step(0);
  } catch (error) {
    first = Promise.reject(error);
  }
  return first.catch((error: unknown) => retry(ctx, step, error, deadline));
}

/** The attempts after a failed first one, paused 50 ms, then twice as long each time up to 1 s. */
async function retry<T>(ctx: RedisContext, step: (attempt: number) => Promise<T>, failure: unknown, deadline: number): Promise<T> {
  let error = failure;
  for (let attempt = 1, pause = 50; ; attempt++, pause = Math.min(2 * pause, 1000)) {
    if (!(error instanceof Error) || !TRANSIENT.test(error.message) || Date.now() + pause > deadline) throw error;
    ctx.report(error, { phase: 'store' });
    await delay(pause);
    try {
      return await step(attempt);
    } catch (next) {
      error = next;
    }
  }
}
