import type { RedisContext } from './context.js';
import { IN_FLIGHT_TTL_MS } from './context.js';
import type { LeaseKeeper } from './leases.js';
import { DELETE_IF_SAME, MARK_IDEMPOTENCY, PUT_IF_ABSENT } from './scripts.js';
import type { IdempotencyRecord } from '../turn-log.js';

/**
 * The idempotency ledger: one string per (principal, key), in a slot of its own. The
 * record's life follows its turn's through TTLs set in separate steps (see
 * appendBodies and LeaseKeeper), so a record can outlive its turn by a moment; such a
 * record is found and removed here before it could replay a turn that is gone.
 */
export class IdempotencyLedger {
  readonly #ctx: RedisContext;
  readonly #leases: LeaseKeeper;

  constructor(ctx: RedisContext, leases: LeaseKeeper) {
    this.#ctx = ctx;
    this.#leases = leases;
  }

  async get(principal: string, key: string): Promise<IdempotencyRecord | undefined> {
    const client = await this.#ctx.connection.client();
    const found = await client.get(this.#ctx.keys.idempotency(principal, key));
    return found === null ? undefined : (JSON.parse(found) as IdempotencyRecord);
  }

  async putIfAbsent(principal: string, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    const { connection, keys, liveTtlMs } = this.#ctx;
    const name = keys.idempotency(principal, key);
    const ttl = record.state === 'in_flight' ? IN_FLIGHT_TTL_MS : liveTtlMs;
    // Twice at most: a stale record removed, then the put proper (which a racing request may win).
    for (let attempt = 0; ; attempt++) {
      const found = await connection.run(PUT_IF_ABSENT, [name], [JSON.stringify(record), ttl]);
      if (typeof found !== 'string') return undefined;
      const existing = JSON.parse(found) as IdempotencyRecord;
      if (attempt > 0 || !(await this.#outlivedItsTurn(existing))) return existing;
      // Only that exact record goes: a request that replaced it meanwhile keeps its own.
      await connection.run(DELETE_IF_SAME, [name], [found]);
    }
  }

  /**
   * in_flight → done. The turn learns its key first, so whoever ends the turn can give
   * the record the turn's retention; only then does the record name the turn. A crash
   * between the two leaves the record in_flight, which expires on its own.
   */
  async complete(principal: string, key: string, record: IdempotencyRecord): Promise<void> {
    const { connection, keys, liveTtlMs } = this.#ctx;
    const name = keys.idempotency(principal, key);
    if (record.turnId !== undefined) await connection.run(MARK_IDEMPOTENCY, [keys.turn(record.turnId).turn], [name]);
    const client = await connection.client();
    // The turn is live now; whoever ends it shortens the key's life to the retention period.
    await client.set(name, JSON.stringify(record), 'PX', liveTtlMs);
    if (record.turnId !== undefined) this.#leases.attachIdempotency(record.turnId, name);
  }

  async delete(principal: string, key: string): Promise<void> {
    const client = await this.#ctx.connection.client();
    await client.del(this.#ctx.keys.idempotency(principal, key));
  }

  /** A done record whose turn's keys expired: retention is over for both. */
  async #outlivedItsTurn(record: IdempotencyRecord): Promise<boolean> {
    if (record.state !== 'done' || record.turnId === undefined) return false;
    const client = await this.#ctx.connection.client();
    return (await client.exists(this.#ctx.keys.turn(record.turnId).turn)) === 0;
  }
}
