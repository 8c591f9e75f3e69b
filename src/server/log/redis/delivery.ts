import type { ReceiptBody } from '../../../protocol/server-schemas.js';
import type { RedisContext } from './context.js';
import { DELIVER } from './scripts.js';
import type { OperatorIndex } from '../operator-index.js';
import { isExpiredTurn, type DeliveryOutcome, type ExpiredTurn, type StopRequest, type StoredTurn } from '../turn-log.js';

type Read = (turnId: string) => Promise<StoredTurn | ExpiredTurn | undefined>;

/**
 * A receipt (docs/protocol.md section 10): checked and recorded by one script on the turn's
 * slot, with the operator index moved around it. A mismatch joins the `mismatch` sets
 * before the record says so (the hash is looked at first); every other set is settled
 * after. Interrupted in between, the index holds an extra entry that listings repair.
 */
export async function recordDelivery(ctx: RedisContext, index: OperatorIndex, read: Read, turnId: string, receipt: ReceiptBody, at: string): Promise<DeliveryOutcome> {
  const before = await read(turnId);
  if (before === undefined || isExpiredTurn(before)) return { kind: 'unknown' };
  const keys = ctx.keys.turn(turnId);
  if (before.endedAt !== undefined && before.delivery?.state === 'pending') {
    const client = await ctx.connection.client();
    const [last] = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1);
    const body = last?.[1][1];
    const logged = body === undefined ? undefined : (JSON.parse(body) as { textSha256?: unknown }).textSha256;
    if (logged !== receipt.textSha256) await index.enter({ ...before, delivery: { state: 'mismatch', at } });
  }
  const outcome = (await ctx.connection.run(DELIVER, [keys.turn, keys.events], [receipt.seq, receipt.textSha256, at])) as string;
  if (outcome === 'unknown') return { kind: 'unknown' };
  const after = await read(turnId);
  if (after === undefined || isExpiredTurn(after)) return { kind: 'unknown' };
  await index.settle(after);
  return { kind: outcome as Exclude<DeliveryOutcome['kind'], 'unknown'>, turn: after };
}

/** The cancel key's value: `1` for a user's cancel (as before 1.2), the stop as JSON for an operator's end. */
export function encodeStop(stop: StopRequest): string {
  return stop.kind === 'cancel' ? '1' : JSON.stringify(stop);
}

export function decodeStop(value: string | null): StopRequest | undefined {
  if (value === null) return undefined;
  if (value === '1') return { kind: 'cancel' };
  try {
    const parsed = JSON.parse(value) as { kind?: unknown; reason?: unknown };
    if (parsed.kind === 'operator' && typeof parsed.reason === 'string') return { kind: 'operator', reason: parsed.reason };
  } catch {
    // another writer's value: still a stop
  }
  return { kind: 'cancel' };
}
