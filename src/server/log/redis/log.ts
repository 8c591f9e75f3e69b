import { randomUUID } from 'node:crypto';
import type { TurnEvent } from '../../../protocol/schemas.js';
import type { ReceiptBody } from '../../../protocol/server-schemas.js';
import { OperatorIndex, type OperatorQuery } from '../operator-index.js';
import { decodeStop, encodeStop, recordDelivery } from './delivery.js';
import { RedisSortedSets } from './operator-sets.js';
import type { Cluster, Redis } from 'ioredis';
import { execAll, headOf, isLive, toEvent, toStoredTurn, type TurnHash } from './codec.js';
import { openConnection, type RedisClient } from './connection.js';
import type { RedisContext } from './context.js';
import { ConversationIndex } from './conversations.js';
import { IdempotencyLedger } from './idempotency.js';
import { keyNames, type TurnKeys } from './keys.js';
import { LeaseKeeper } from './leases.js';
import { resolveSettings, type RedisTurnLogOptions } from './options.js';
import { CREATE } from './scripts.js';
import { createShardWaiter } from './shard-waiter.js';
import { createStreamWaiter, type StreamEntry } from './stream-waiter.js';
import { readPage } from './page-read.js';
import { readTurn, TurnWrites } from './turn-writes.js';
import {
  DEFAULT_PAGE_BYTES,
  pendingTurn,
  type EventPage,
  type ExpiredTurn,
  type IdempotencyRecord,
  type NewTurn,
  type NewTurnEvent,
  type StoredTurn,
  type TurnLog,
  type DeliveryOutcome,
  type StopRequest,
  type WaitOptions,
} from '../turn-log.js';

/** Longest single blocking read or idle subscription; the follower loop re-issues it while anyone waits. */
const BLOCK_MS = 10_000;

/**
 * Wakes followers when their turn's log grows: XREAD on one Redis, sharded pub/sub on a
 * cluster. The XREAD also hands over the entries it read (`onEntries`); pub/sub carries none.
 */
interface Waiter {
  wait(keys: TurnKeys, after: number, signal: AbortSignal, timeoutMs: number, onEntries?: (entries: StreamEntry[]) => void): Promise<boolean>;
  close(): Promise<void>;
}

/** Most event data a wake-up hands back (about one follow chunk); beyond it the caller reads pages. */
const WOKEN_BYTES = 64 * 1024;

/** The Redis Streams {@link TurnLog}; `createRedisTurnLog` documents the layout. */
export class RedisTurnLog implements TurnLog {
  readonly #ctx: RedisContext;
  readonly #leases: LeaseKeeper;
  readonly #ledger: IdempotencyLedger;
  readonly #index: ConversationIndex;
  readonly #operator: OperatorIndex;
  readonly #writes: TurnWrites;
  #waiter: Waiter | undefined;
  #closed = false;

  constructor(options: RedisTurnLogOptions) {
    const settings = resolveSettings(options);
    const connection = openConnection(options, (error) => settings.report(error, { phase: 'store' }));
    this.#ctx = { ...settings, connection, keys: keyNames(settings.prefix), owner: randomUUID() };
    this.#leases = new LeaseKeeper(this.#ctx);
    connection.onReset(() => this.#leases.distrustAll());
    this.#ledger = new IdempotencyLedger(this.#ctx, this.#leases);
    this.#index = new ConversationIndex(this.#ctx);
    this.#operator = new OperatorIndex(new RedisSortedSets(this.#ctx), { retentionMs: settings.retentionMs, now: settings.now });
    this.#writes = new TurnWrites(this.#ctx, this.#leases, this.#operator);
  }

  async #waiterFor(): Promise<Waiter> {
    if (this.#waiter) return this.#waiter;
    const { connection, keys, owner, report } = this.#ctx;
    const client = await connection.client();
    const onError = (error: unknown): void => report(error, { phase: 'store' });
    if (this.#waiter) return this.#waiter;
    if (connection.isCluster) {
      this.#waiter = createShardWaiter({ client: client as Cluster, lingerMs: BLOCK_MS, onError });
    } else {
      const streams = createStreamWaiter({ client: client as Redis, wakeKey: keys.wakeStream(owner), blockMs: BLOCK_MS, onError });
      this.#waiter = { wait: (turnKeys, ...rest) => streams.wait(turnKeys.events, ...rest), close: () => streams.close() };
    }
    return this.#waiter;
  }

  #readTurn(turnId: string): Promise<[TurnHash, boolean, string | null]> {
    return readTurn(this.#ctx, turnId);
  }

  async createTurn(init: NewTurn): Promise<StoredTurn> {
    const { connection, keys, owner, leaseMs, liveTtlMs, retentionMs } = this.#ctx;
    const createdAtMs = Number.isFinite(Date.parse(init.createdAt)) ? Date.parse(init.createdAt) : this.#ctx.now();
    // Listed first, recorded second: a turn that exists is always in its conversation, and in the operator's live sets.
    await Promise.all([this.#index.add(init.principal, init.conversationId, init.id, createdAtMs), this.#operator.enter(pendingTurn(init))]);
    const turnKeys = keys.turn(init.id);
    const sentAt = performance.now();
    const created = await connection.run(
      CREATE,
      [turnKeys.turn, turnKeys.lease, turnKeys.gone],
      [
        init.id,
        init.conversationId,
        init.messageId,
        init.principal,
        init.createdAt,
        JSON.stringify(init.content),
        owner,
        leaseMs,
        liveTtlMs,
        liveTtlMs + retentionMs,
        init.context === undefined ? '' : JSON.stringify(init.context),
        init.continues ?? '',
      ],
    );
    if (created !== 1) throw new Error(`Turn ${init.id} already exists.`);
    const turn = pendingTurn(init);
    this.#leases.claim(init.id, keys.conversation(init.principal, init.conversationId), turn, sentAt);
    return { ...turn };
  }

  /** A turn produced here is answered from what its producer knows when that is exact (LeaseKeeper.known). */
  async getTurn(turnId: string): Promise<StoredTurn | ExpiredTurn | undefined> {
    const known = await this.#leases.known(turnId);
    if (known !== undefined) return known;
    let [hash, leased, gone] = await this.#readTurn(turnId);
    if (hash['status'] !== undefined && isLive(hash) && !leased) {
      await this.#writes.endLost(toStoredTurn(hash));
      [hash, leased, gone] = await this.#readTurn(turnId);
    }
    // The tombstone holds the principal: another principal's expired turn still answers 404.
    if (hash['status'] === undefined) return gone === null ? undefined : { expired: true, principal: gone };
    return toStoredTurn(hash);
  }

  async append(turnId: string, event: NewTurnEvent): Promise<TurnEvent> {
    return (await this.appendMany(turnId, [event]))[0] as TurnEvent;
  }

  /** One script run for the lot: the coalesced appends of a producer cost one round trip. */
  appendMany(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]> {
    return this.#writes.append(turnId, events);
  }

  read(turnId: string, after: number, limit: number, maxBytes = DEFAULT_PAGE_BYTES): Promise<EventPage> {
    return readPage(this.#ctx, turnId, after, limit, maxBytes);
  }

  /**
   * One look at the turn (none after a fresh read: `justRead`), then the waiter: while
   * events flow that is all it costs, and on one Redis the waiter's XREAD brings the new
   * events along, answered here so the caller need not read them. The lease is only
   * looked at when a wait passed with nothing new (at most a third of a lease): then a
   * lapsed one ends the turn here (`producer_lost`).
   */
  async waitForEvents(turnId: string, after: number, options: WaitOptions): Promise<TurnEvent[] | undefined> {
    const { signal, timeoutMs } = options;
    const keys = this.#ctx.keys.turn(turnId);
    const deadline = Date.now() + timeoutMs;
    const checkEveryMs = Math.max(1, Math.floor(this.#ctx.leaseMs / 3));
    const client = await this.#ctx.connection.client();
    if (options.justRead !== true) {
      const head = await liveHead(client, keys);
      if (head === undefined || head.seq > after) return undefined;
    }
    let woken: StreamEntry[] | undefined;
    const onEntries = (entries: StreamEntry[]): void => void (woken = entries);
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted || this.#closed) return undefined;
      const waiter = await this.#waiterFor();
      if (await waiter.wait(keys, after, signal, Math.min(remaining, checkEveryMs), onEntries)) return wokenEvents(turnId, after, woken);
      if (signal.aborted || this.#closed) return undefined;
      const head = await liveHead(client, keys);
      if (head === undefined || head.seq > after) return undefined;
      if (!head.leased) {
        // Ends the turn (the caller then reads turn.end) or finds the producer alive again.
        const [hash] = await this.#readTurn(turnId);
        if (hash['status'] !== undefined && isLive(hash)) await this.#writes.endLost(toStoredTurn(hash));
        return undefined;
      }
    }
  }

  async ping(): Promise<void> {
    const client = await this.#ctx.connection.client();
    await client.ping();
  }

  release(turnId: string): Promise<void> {
    return this.#leases.release(turnId);
  }

  listTurns(conversationId: string, principal: string, limit: number): Promise<StoredTurn[]> {
    return this.#index.list(conversationId, principal, limit, (turnId) => this.getTurn(turnId));
  }

  getIdempotency(principal: string, key: string): Promise<IdempotencyRecord | undefined> {
    return this.#ledger.get(principal, key);
  }

  putIdempotencyIfAbsent(principal: string, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return this.#ledger.putIfAbsent(principal, key, record);
  }

  completeIdempotency(principal: string, key: string, record: IdempotencyRecord): Promise<void> {
    return this.#ledger.complete(principal, key, record);
  }

  deleteIdempotency(principal: string, key: string): Promise<void> {
    return this.#ledger.delete(principal, key);
  }

  async requestCancel(turnId: string): Promise<void> {
    const client = await this.#ctx.connection.client();
    await client.set(this.#ctx.keys.turn(turnId).cancel, '1', 'PX', this.#ctx.liveTtlMs);
  }

  async isCancelRequested(turnId: string): Promise<boolean> {
    const client = await this.#ctx.connection.client();
    return (await client.exists(this.#ctx.keys.turn(turnId).cancel)) === 1;
  }

  /** The first stop asked for wins (`NX`): the instance producing the turn reads it with {@link stopRequest}. */
  async requestStop(turnId: string, stop: StopRequest): Promise<void> {
    const client = await this.#ctx.connection.client();
    await client.set(this.#ctx.keys.turn(turnId).cancel, encodeStop(stop), 'PX', this.#ctx.liveTtlMs, 'NX');
  }

  async stopRequest(turnId: string): Promise<StopRequest | undefined> {
    const client = await this.#ctx.connection.client();
    return decodeStop(await client.get(this.#ctx.keys.turn(turnId).cancel));
  }

  recordDelivery(turnId: string, receipt: ReceiptBody, at: string): Promise<DeliveryOutcome> {
    return recordDelivery(this.#ctx, this.#operator, (id) => this.getTurn(id), turnId, receipt, at);
  }

  listOperatorTurns(query: OperatorQuery): Promise<StoredTurn[]> {
    return this.#operator.list(query, (turnId) => this.getTurn(turnId));
  }

  /**
   * Gives up the leases still held (see LeaseKeeper.releaseAll), closes the follower
   * connections, and the client when the log opened it.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    // Bounded: with Redis away the releases would wait in the client's queue for a minute;
    // the leases then lapse on their own.
    await settleWithin(this.#leases.releaseAll(), this.#ctx.leaseMs);
    this.#closed = true;
    await this.#waiter?.close();
    await this.#ctx.connection.close();
  }
}

/**
 * The events a wake-up brought, when they continue right after `after`: as many as fit
 * in {@link WOKEN_BYTES} (none when the first alone does not; the caller then reads).
 */
function wokenEvents(turnId: string, after: number, entries: StreamEntry[] | undefined): TurnEvent[] | undefined {
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
async function liveHead(client: RedisClient, keys: TurnKeys): Promise<{ seq: number; leased: boolean } | undefined> {
  const [[lastSeq, endedAt], leased, newest] = (await execAll(
    client.pipeline().hmget(keys.turn, 'lastSeq', 'endedAt').exists(keys.lease).xrevrange(keys.events, '+', '-', 'COUNT', 1),
  )) as [[string | null, string | null], number, StreamEntry[]];
  const head = headOf(newest);
  if (lastSeq === null || endedAt !== null || head?.endStatus !== undefined) return undefined;
  return { seq: Math.max(Number(lastSeq), head?.seq ?? 0), leased: leased === 1 };
}

/** Waits for `work` at most `ms`; its failure or lateness is not the caller's concern. */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
