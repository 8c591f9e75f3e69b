import type { ClusterNode, ClusterOptions } from 'ioredis';
import { LifelineError } from '../../../errors.js';
import type { ServerErrorReporter } from '../../producer/producer.js';
import type { RedisClient } from './connection.js';

/** Options of `createRedisTurnLog`. Give exactly one of `client`, `url` and `cluster`. */
export interface RedisTurnLogOptions {
  /**
   * An ioredis client: a `Redis` (standalone or Sentinel) or a `Cluster`. The log sends
   * its commands through it and never closes it. On a standalone Redis it opens one more
   * connection (`client.duplicate()`) for blocking reads; on a cluster, one Cluster
   * duplicate with `shardedSubscribers` (a connection per master) for wake-ups. Its
   * default `replyMapping` (`'legacy'`) is required.
   */
  client?: RedisClient;
  /**
   * A Redis URL (`redis://…`, `rediss://…`), or a cluster's nodes as
   * `redis-cluster://[user:password@]host:port,host:port,…` (`rediss-cluster://` for
   * TLS); the log connects and `close()` disconnects. No default: give this, `client` or `cluster`.
   */
  url?: string;
  /** A Redis Cluster to connect to: its seed nodes and any ioredis Cluster options. No default. */
  cluster?: { nodes: ClusterNode[]; options?: ClusterOptions };
  /**
   * Prepended to every key the log writes, so several apps can share one Redis. Default
   * `'lifeline:'`. No `{` or `}`: the log chooses the hash tags itself.
   */
  keyPrefix?: string;
  /**
   * How long an ended turn's log, and the idempotency key that created it, are kept
   * after `turn.end`, ms. Default 24 h. For one more retention period a tombstone makes
   * the turn answer `410 turn_expired` rather than `404`. A live turn never expires while
   * its producer holds the lease; an orphaned one nobody looks at expires
   * `retentionMs + producerLeaseMs` after its last renewal.
   */
  retentionMs?: number;
  /**
   * The producer lease of a live turn, ms. The instance that created a turn extends it
   * every `producerLeaseMs / 4` from the moment it creates the turn until `turn.end`;
   * when it lapses (the instance died or lost Redis), the next look by any instance ends
   * the turn `failed` with error code `producer_lost`. A follower idle on a live turn
   * looks every `producerLeaseMs / 3`. Default 2 000: with the handler's 1 000 ms
   * heartbeat, followers on any instance see a dead producer's turn end within about
   * 2.7 s (under three heartbeats), before a client's 2.5 s stall watchdog would need to
   * fire twice. Raise it if your Redis or event loop can pause longer than a second.
   */
  producerLeaseMs?: number;
  /** Clock for `createdAt`/`updatedAt`/`endedAt`, ms since the epoch. Default `Date.now`. Retention runs on Redis's clock. */
  now?: () => number;
  /**
   * Failures the log handled itself (lease renewal, the follower connection) and turns
   * it ended because their producer was lost. Pass the handler's `onError` to see both
   * in one place. Default `console.error`.
   */
  onError?: ServerErrorReporter;
}

/** 24 hours, the protocol's reference retention. */
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** See `producerLeaseMs`: lease, renewal and heartbeat defaults are chosen together. */
export const DEFAULT_PRODUCER_LEASE_MS = 2000;

export interface Settings {
  prefix: string;
  retentionMs: number;
  leaseMs: number;
  liveTtlMs: number;
  indexTtlMs: number;
  now: () => number;
  report: ServerErrorReporter;
}

function checkPositive(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new LifelineError('invalid_argument', `${name} must be a positive integer number of ms, got ${String(value)}.`);
  }
}

/** Defaults applied and every number checked; throws `invalid_argument`. */
export function resolveSettings(options: RedisTurnLogOptions): Settings {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  const leaseMs = options.producerLeaseMs ?? DEFAULT_PRODUCER_LEASE_MS;
  checkPositive('retentionMs', retentionMs);
  checkPositive('producerLeaseMs', leaseMs);
  const prefix = options.keyPrefix ?? 'lifeline:';
  if (/[{}]/.test(prefix)) {
    throw new LifelineError('invalid_argument', `keyPrefix must not contain '{' or '}' (the log picks the hash tags), got ${JSON.stringify(prefix)}.`);
  }
  return {
    prefix,
    retentionMs,
    leaseMs,
    liveTtlMs: retentionMs + leaseMs,
    indexTtlMs: 2 * retentionMs + leaseMs,
    now: options.now ?? Date.now,
    report:
      options.onError ??
      ((error, context) => console.error(`[lifeline] redis turn log${context.turnId ? `, turn ${context.turnId}` : ''}:`, error)),
  };
}
