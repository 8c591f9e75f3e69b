import type { RedisContext } from './context.js';
import type { IndexEntry, SortedSets } from '../operator-index.js';

const bound = (value: number): string => (value === Infinity ? '+inf' : value === -Infinity ? '-inf' : String(value));

/**
 * The Redis {@link SortedSets} of the operator index: one sorted set per name, each in a
 * slot of its own (no hash tag), written one command per key so it works the same on
 * Redis Cluster. Every write gives its key the index TTL, so sets of principals and
 * conversations nobody uses any more go away on their own.
 */
export class RedisSortedSets implements SortedSets {
  readonly #ctx: RedisContext;

  constructor(ctx: RedisContext) {
    this.#ctx = ctx;
  }

  #key(name: string): string {
    return `${this.#ctx.keys.operator}${name}`;
  }

  async add(sets: readonly string[], id: string, score: number): Promise<void> {
    const client = await this.#ctx.connection.client();
    await Promise.all(
      sets.map(async (name) => {
        const key = this.#key(name);
        await client.zadd(key, score, id);
        await client.pexpire(key, this.#ctx.indexTtlMs);
      }),
    );
  }

  async remove(sets: readonly string[], id: string): Promise<void> {
    const client = await this.#ctx.connection.client();
    await Promise.all(sets.map((name) => client.zrem(this.#key(name), id)));
  }

  async range(name: string, min: number, max: number, offset: number, count: number): Promise<IndexEntry[]> {
    const client = await this.#ctx.connection.client();
    const flat = await client.zrevrangebyscore(this.#key(name), bound(max), bound(min), 'WITHSCORES', 'LIMIT', offset, count);
    const entries: IndexEntry[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push({ id: flat[i] as string, score: Number(flat[i + 1]) });
    return entries;
  }

  async trim(name: string, before: number): Promise<void> {
    const client = await this.#ctx.connection.client();
    await client.zremrangebyscore(this.#key(name), '-inf', `(${before}`);
  }
}
