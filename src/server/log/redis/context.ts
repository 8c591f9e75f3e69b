import type { ServerErrorReporter } from '../../producer/producer.js';
import type { Connection } from './connection.js';
import type { KeyNames } from './keys.js';

/** What every part of the Redis turn log shares: the connection, key names and timings. */
export interface RedisContext {
  connection: Connection;
  keys: KeyNames;
  /** How long an ended turn is kept, ms. */
  retentionMs: number;
  /** The producer lease, ms; renewed every third of it. */
  leaseMs: number;
  /**
   * TTL of a live turn's keys, refreshed by every append and lease renewal: longer than
   * a renewal period, so a turn never expires while it is produced, however silent.
   */
  liveTtlMs: number;
  /** TTL of a conversation index, refreshed at every write: outlives its turns' tombstones. */
  indexTtlMs: number;
  /** Clock for the turn's timestamps. */
  now(): number;
  report: ServerErrorReporter;
  /** This instance's lease holder name. */
  owner: string;
}

/**
 * An `in_flight` idempotency record only spans the few round trips between accepting a
 * submission and creating its turn; if the accepting instance dies there, the key
 * answers 409 for at most this long instead of for a whole retention period.
 */
export const IN_FLIGHT_TTL_MS = 60_000;
