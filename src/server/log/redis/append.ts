import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../../protocol/integrity.js';
import { current, execAll, headOf, isLive, toEvent, type TurnHash } from './codec.js';
import type { RedisContext } from './context.js';
import { runThroughFailover } from './failover.js';
import type { LeaseKeeper } from './leases.js';
import { APPEND, TOUCH_IDEMPOTENCY } from './scripts.js';
import type { NewTurnEvent } from '../turn-log.js';

export type AppendResult = number | 'unknown' | 'ended' | 'moved' | 'held';

/** One event to log: its JSON body, and its end status when it is `turn.end`. */
export interface Body {
  body: string;
  endStatus: string;
}

/**
 * Appends `bodies` in one atomic step on the turn's slot. Returns the new lastSeq, or
 * the reason it did not append. Once it logged `turn.end` it sets the conversation
 * index's and the idempotency record's TTLs in their own slots: two more steps, which
 * only ever lengthen a TTL or set it to the turn's own, so a crash between them leaves
 * a key living a little longer than its turn, never shorter (see docs/reliability.md).
 */
export async function appendBodies(
  ctx: RedisContext,
  leases: LeaseKeeper,
  turnId: string,
  bodies: Body[],
  condition: { expectSeq?: number; leaseLapsed?: boolean } = {},
): Promise<AppendResult> {
  const { connection, keys, retentionMs, liveTtlMs } = ctx;
  const at = new Date(ctx.now()).toISOString();
  const args: (string | number)[] = [
    at,
    retentionMs,
    2 * retentionMs,
    liveTtlMs,
    condition.expectSeq === undefined ? '' : condition.expectSeq,
    condition.leaseLapsed ? '1' : '0',
    randomUUID(),
    '0',
  ];
  for (const { body, endStatus } of bodies) args.push(body, endStatus);
  const turnKeys = keys.turn(turnId);
  const scriptKeys = [turnKeys.turn, turnKeys.events, turnKeys.lease, turnKeys.cancel, turnKeys.gone];
  if (connection.isCluster) scriptKeys.push(turnKeys.wake);
  leases.appending(turnId, true);
  let reply: [number, string?, string?, string?];
  try {
    reply = (await runThroughFailover(ctx, (attempt) => {
      // Only a retry looks for its own earlier attempt.
      args[7] = attempt > 0 ? '1' : '0';
      if (attempt > 0) leases.distrust(turnId);
      return connection.run(APPEND, scriptKeys, args);
    })) as [number, string?, string?, string?];
  } catch (error) {
    // It may have landed all the same.
    leases.distrust(turnId);
    throw error;
  } finally {
    leases.appending(turnId, false);
  }
  const [seq, principal, conversationId, idempotencyKey] = reply;
  if (seq <= 0) leases.distrust(turnId);
  if (seq === 0) return 'unknown';
  if (seq === -1) return 'ended';
  if (seq === -2) return 'moved';
  if (seq === -3) return 'held';
  if (!leases.acknowledge(turnId, seq, at)) {
    throw new Error(`Turn ${turnId}: Redis answered seq ${seq}, not past an earlier acknowledged append; the log lost events (a failover before replication).`);
  }
  if (principal !== undefined && conversationId !== undefined) {
    leases.forget(turnId);
    const client = await connection.client();
    // Other slots than the turn's: a failover there must not fail an append that landed.
    await runThroughFailover(ctx, () =>
      Promise.all([
        client.pexpire(keys.conversation(principal, conversationId), ctx.indexTtlMs),
        idempotencyKey ? connection.run(TOUCH_IDEMPOTENCY, [idempotencyKey], [turnId, retentionMs]) : undefined,
      ]),
    );
  }
  return seq;
}

/**
 * Ends a live turn whose producer lease lapsed: `turn.end` `failed`, error
 * `producer_lost`, with the length and hash of the text logged so far (and a
 * `turn.start` first if the producer died before writing one). Atomic and once:
 * it only appends when the log still ends at the seq it hashed and the lease is
 * still lapsed, so two instances noticing at once cannot both end it, and a
 * producer that was only slow (and renewed or appended since) keeps its turn.
 */
export async function endIfProducerLost(ctx: RedisContext, leases: LeaseKeeper, turnId: string): Promise<void> {
  const turnKeys = ctx.keys.turn(turnId);
  const client = await ctx.connection.client();
  const [record, entries] = (await execAll(client.multi().hgetall(turnKeys.turn).xrange(turnKeys.events, '-', '+'))) as [
    TurnHash,
    [string, string[]][],
  ];
  const hash = current(record, headOf(entries.slice(-1)));
  if (hash['status'] === undefined || !isLive(hash)) return;
  const lastSeq = Number(hash['lastSeq']);
  let text = '';
  for (const entry of entries) {
    const event = toEvent(turnId, entry);
    if (event.type === 'delta') text += event.text;
  }
  const bodies: Body[] = [];
  if (lastSeq === 0) {
    const start: NewTurnEvent = {
      type: 'turn.start',
      messageId: hash['messageId'] ?? '',
      conversationId: hash['conversationId'] ?? '',
      createdAt: hash['createdAt'] ?? '',
    };
    bodies.push({ body: JSON.stringify(start), endStatus: '' });
  }
  const end: NewTurnEvent = {
    type: 'turn.end',
    status: 'failed',
    error: { code: 'producer_lost', message: 'The server instance producing this turn stopped; the turn cannot continue.' },
    textLength: text.length,
    textSha256: await sha256Hex(text),
  };
  bodies.push({ body: JSON.stringify(end), endStatus: 'failed' });
  const result = await appendBodies(ctx, leases, turnId, bodies, { expectSeq: lastSeq, leaseLapsed: true });
  if (typeof result === 'number') {
    ctx.report(new Error(`The producer of turn ${turnId} let its lease lapse; the turn was ended failed/producer_lost at seq ${result}.`), {
      phase: 'store',
      turnId,
    });
  }
}
