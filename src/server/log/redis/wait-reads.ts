import type { TurnEvent } from '../../../protocol/schemas.js';
import { execAll, headOf, toEvent } from './codec.js';
import type { RedisClient } from './connection.js';
import type { TurnKeys } from './keys.js';
import type { StreamEntry } from './stream-waiter.js';

/*
 * What a follower's wait on the Redis log reads (log.ts waitForEvents): the events a
 * wake-up brought, and where a live turn stands.
 */

/** Most event data a wake-up hands back (about one follow chunk); beyond it the caller reads pages. */
const WOKEN_BYTES = 64 * 1024;

/**
 * The events a wake-up brought, when they continue right after `after`: as many as fit
 * in {@link WOKEN_BYTES} (none when the first alone does not; the caller then reads).
 */
export function wokenEvents(turnId: string, after: number, entries: StreamEntry[] | undefined): TurnEvent[] | undefined {
  const events: TurnEvent[] = [];
  let bytes = 0;
  for (const entry of entries ?? []) {
    bytes += entry[1][1]?.length ?? 0;
    if (bytes > WOKEN_BYTES) break;
    const event = toEvent(turnId, entry);
    if (event.seq !== after + events.length + 1) break;
    events.push(event);
  }
  return events.length > 0 ? events : undefined;
}

/**
 * Where a live turn's log stands (its newest seq, its lease held or not), or undefined
 * once it ended or is gone. Three reads in one round trip, no MULTI: record first, so an
 * end the record missed is in the stream read after it.
 */
export async function liveHead(client: RedisClient, keys: TurnKeys): Promise<{ seq: number; leased: boolean } | undefined> {
  const [[lastSeq, endedAt], leased, newest] = (await execAll(
    client.pipeline().hmget(keys.turn, 'lastSeq', 'endedAt').exists(keys.lease).xrevrange(keys.events, '+', '-', 'COUNT', 1),
  )) as [[string | null, string | null], number, StreamEntry[]];
  const head = headOf(newest);
  if (lastSeq === null || endedAt !== null || head?.endStatus !== undefined) return undefined;
  return { seq: Math.max(Number(lastSeq), head?.seq ?? 0), leased: leased === 1 };
}
