import type { TurnEvent } from '../../../protocol/schemas.js';
import type { EventPage } from '../turn-log.js';
import { toEvent } from './codec.js';
import type { RedisContext } from './context.js';

/**
 * Stream entries in a page read's first XRANGE: few enough that even events at the
 * default size cap (256 Ki) stay within one page's bytes. Later batches are sized by
 * the average entry seen so far.
 */
const FIRST_READ_BATCH = 16;

/**
 * One page of a turn's events after `after`: at most `limit`, and at most `maxBytes` of
 * them (always at least one), read in XRANGE batches so a page of huge events is never
 * fetched whole.
 */
export async function readPage(ctx: RedisContext, turnId: string, after: number, limit: number, maxBytes: number): Promise<EventPage> {
  const client = await ctx.connection.client();
  const eventsKey = ctx.keys.turn(turnId).events;
  const events: TurnEvent[] = [];
  let bytes = 0;
  let next = Math.max(0, after) + 1;
  let batch = FIRST_READ_BATCH;
  for (;;) {
    const count = Math.min(limit - events.length + 1, batch);
    // `${n}` as a range start means the id n-0, the entry of seq n.
    const entries = await client.xrange(eventsKey, `${next}`, '+', 'COUNT', count);
    for (const entry of entries) {
      // The stored body plus the turnId and seq the event gains on the wire.
      const size = (entry[1][1]?.length ?? 0) + turnId.length + 32;
      if (events.length === limit || (events.length > 0 && bytes + size > maxBytes)) return { events, hasMore: true };
      bytes += size;
      const event = toEvent(turnId, entry);
      events.push(event);
      next = event.seq + 1;
    }
    if (entries.length < count) return { events, hasMore: false };
    // Sized to the bytes still wanted, so a page of huge events is never fetched whole (+1: the one that says hasMore).
    batch = Math.ceil(Math.max(0, maxBytes - bytes) / (bytes / events.length)) + 1;
  }
}
