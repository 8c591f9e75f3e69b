import type { RedisContext } from './context.js';
import type { IndexEntry, SortedSets } from '../operator-index.js';

const bound = (value: number): string => (value === Infinity ? '+inf' : value === -Infinity ? '-inf' : String(value));

/**
 * The Redis {@link SortedSets} of the operator index: one sorted set per name, each in a
 * slot of its own (no hash tag), written one command per key so it works the same on
 * Redis Cluster. A set of ended turns gets the retention period as its TTL at every add:
 * every turn in it has expired by then, so sets nobody adds to any more go away on their
 * own. A live set has none (a turn may stay live for longer); it only holds live turns,
 * and Redis deletes it once it is empty.
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
        if (!name.startsWith('live:')) await client.pexpire(key, this.#ctx.retentionMs);
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
