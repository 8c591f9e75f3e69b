import { current, execAll, headOf, isLive, toStoredTurn, type TurnHash } from './codec.js';
import type { RedisContext } from './context.js';
import { INDEX } from './scripts.js';
import { isExpiredTurn, type ExpiredTurn, type StoredTurn } from '../turn-log.js';

/** What a listing makes of one index entry. */
type Entry = { kind: 'turn'; hash: TurnHash; leased: boolean } | { kind: 'gone' } | { kind: 'not-yet' };

/**
 * A principal's turns in one conversation: a sorted set by creation time, in a slot of
 * its own. An entry is written BEFORE its turn's record (two steps, no cross-slot
 * atomicity), so a turn that exists is always listed; an entry whose record does not
 * exist yet is skipped (invisible), and dropped once it is older than anything a turn
 * could still be (the creating request failed between the two steps).
 */
export class ConversationIndex {
  readonly #ctx: RedisContext;

  constructor(ctx: RedisContext) {
    this.#ctx = ctx;
  }

  /** Step one of creating a turn. Idempotent: a retry keeps the entry's place. */
  async add(principal: string, conversationId: string, turnId: string, createdAtMs: number): Promise<void> {
    const key = this.#ctx.keys.conversation(principal, conversationId);
    await this.#ctx.connection.run(INDEX, [key], [turnId, createdAtMs, this.#ctx.indexTtlMs]);
  }

  /**
   * Newest first. `resolve` re-reads a live turn whose lease lapsed (ending it first),
   * so the list never shows a dead turn as live.
   */
  async list(
    conversationId: string,
    principal: string,
    limit: number,
    resolve: (turnId: string) => Promise<StoredTurn | ExpiredTurn | undefined>,
  ): Promise<StoredTurn[]> {
    const key = this.#ctx.keys.conversation(principal, conversationId);
    const client = await this.#ctx.connection.client();
    const found: StoredTurn[] = [];
    const stale: string[] = [];
    // An entry with neither record nor tombstone older than this can only be a failed create.
    const oldest = this.#ctx.now() - this.#ctx.indexTtlMs;
    let offset = 0;
    while (found.length < limit) {
      const flat = await client.zrevrange(key, offset, offset + limit - found.length - 1, 'WITHSCORES');
      if (flat.length === 0) break;
      offset += flat.length / 2;
      const ids = flat.filter((_, i) => i % 2 === 0);
      const entries = await Promise.all(ids.map((id) => this.#entry(id)));
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] as string;
        const entry = entries[i] as Entry;
        if (entry.kind === 'gone' || (entry.kind === 'not-yet' && Number(flat[2 * i + 1]) < oldest)) stale.push(id);
        if (entry.kind !== 'turn') continue;
        const turn = isLive(entry.hash) && !entry.leased ? await resolve(id) : toStoredTurn(entry.hash);
        if (turn !== undefined && !isExpiredTurn(turn) && turn.principal === principal && turn.conversationId === conversationId) found.push(turn);
      }
    }
    // Retention removed these turns' records; their index entries go too.
    if (stale.length > 0) await client.zrem(key, ...stale);
    return found;
  }

  /** One turn's record (as of its newest entry), lease and tombstone, read in one round trip from the turn's slot. */
  async #entry(turnId: string): Promise<Entry> {
    const keys = this.#ctx.keys.turn(turnId);
    const client = await this.#ctx.connection.client();
    // No MULTI: the record is read first, and `current` lets the stream read after it win.
    const pipeline = client.pipeline().hgetall(keys.turn).exists(keys.lease).exists(keys.gone).xrevrange(keys.events, '+', '-', 'COUNT', 1);
    const [hash, leased, gone, newest] = (await execAll(pipeline)) as [TurnHash, number, number, [string, string[]][]];
    if (hash['status'] !== undefined) return { kind: 'turn', hash: current(hash, headOf(newest)), leased: leased === 1 };
    return gone === 1 ? { kind: 'gone' } : { kind: 'not-yet' };
  }
}
