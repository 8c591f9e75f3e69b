import { randomUUID } from 'node:crypto';
import type { ReceiptBody, TurnEvent } from '../../../protocol/schemas.js';
import { OperatorIndex, type OperatorQuery } from '../operator-index.js';
import { decodeStop, encodeStop, recordDelivery } from './delivery.js';
import { RedisSortedSets } from './operator-sets.js';
import type { Cluster, Redis } from 'ioredis';
import { appendBodies, endIfProducerLost } from './append.js';
import { execAll, isLive, toEvent, toStoredTurn, type TurnHash } from './codec.js';
import { openConnection } from './connection.js';
import type { RedisContext } from './context.js';
import { ConversationIndex } from './conversations.js';
import { IdempotencyLedger } from './idempotency.js';
import { keyNames, type TurnKeys } from './keys.js';
import { LeaseKeeper } from './leases.js';
import { resolveSettings, type RedisTurnLogOptions } from './options.js';
import { CREATE } from './scripts.js';
import { createShardWaiter } from './shard-waiter.js';
import { createStreamWaiter } from './stream-waiter.js';
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
} from '../turn-log.js';

/**
 * Stream entries in a page read's first XRANGE: few enough that even events at the
 * default size cap (256 Ki) stay within one page's bytes. Later batches are sized by
 * the average entry seen so far.
 */
const FIRST_READ_BATCH = 16;
/** Longest single blocking read or idle subscription; the follower loop re-issues it while anyone waits. */
const BLOCK_MS = 10_000;

/** Wakes followers when their turn's log grows: XREAD on one Redis, sharded pub/sub on a cluster. */
interface Waiter {
  wait(keys: TurnKeys, after: number, signal: AbortSignal, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The Redis Streams {@link TurnLog}; `createRedisTurnLog` documents the layout. */
export class RedisTurnLog implements TurnLog {
  readonly #ctx: RedisContext;
  readonly #leases: LeaseKeeper;
  readonly #ledger: IdempotencyLedger;
  readonly #index: ConversationIndex;
  readonly #operator: OperatorIndex;
  #waiter: Waiter | undefined;
  #closed = false;

  constructor(options: RedisTurnLogOptions) {
    const settings = resolveSettings(options);
    const connection = openConnection(options, (error) => settings.report(error, { phase: 'store' }));
    this.#ctx = { ...settings, connection, keys: keyNames(settings.prefix), owner: randomUUID() };
    this.#leases = new LeaseKeeper(this.#ctx);
    this.#ledger = new IdempotencyLedger(this.#ctx, this.#leases);
    this.#index = new ConversationIndex(this.#ctx);
    this.#operator = new OperatorIndex(new RedisSortedSets(this.#ctx), { retentionMs: settings.retentionMs, now: settings.now });
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

  /** The turn's record, lease and tombstone (its principal), read together from its slot. */
  async #readTurn(turnId: string): Promise<[TurnHash, boolean, string | null]> {
    const keys = this.#ctx.keys.turn(turnId);
    const client = await this.#ctx.connection.client();
    const [hash, leased, gone] = (await execAll(client.multi().hgetall(keys.turn).exists(keys.lease).get(keys.gone))) as [
      TurnHash,
      number,
      string | null,
    ];
    return [hash, leased === 1, gone];
  }

  async createTurn(init: NewTurn): Promise<StoredTurn> {
    const { connection, keys, owner, leaseMs, liveTtlMs, retentionMs } = this.#ctx;
    const createdAtMs = Number.isFinite(Date.parse(init.createdAt)) ? Date.parse(init.createdAt) : this.#ctx.now();
    // Listed first, recorded second: a turn that exists is always in its conversation, and in the operator's live sets.
    await Promise.all([this.#index.add(init.principal, init.conversationId, init.id, createdAtMs), this.#operator.enter(pendingTurn(init))]);
    const turnKeys = keys.turn(init.id);
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
    this.#leases.claim(init.id, keys.conversation(init.principal, init.conversationId));
    return pendingTurn(init);
  }

  async getTurn(turnId: string): Promise<StoredTurn | ExpiredTurn | undefined> {
    let [hash, leased, gone] = await this.#readTurn(turnId);
    if (hash['status'] !== undefined && isLive(hash) && !leased) {
      await this.#endLost(toStoredTurn(hash));
      [hash, leased, gone] = await this.#readTurn(turnId);
    }
    // The tombstone holds the principal: another principal's expired turn still answers 404.
    if (hash['status'] === undefined) return gone === null ? undefined : { expired: true, principal: gone };
    return toStoredTurn(hash);
  }

  /**
   * Ends a turn whose producer lease lapsed (see endIfProducerLost), moving it in the
   * operator index around the step: into its ended sets before, out of the live ones after.
   */
  async #endLost(turn: StoredTurn): Promise<void> {
    await this.#operator.enter(this.#ended(turn, 'failed'));
    await endIfProducerLost(this.#ctx, this.#leases, turn.id);
    await this.#settle(turn.id);
  }

  /** What the record of `turn` will say once its `turn.end` is logged. */
  #ended(turn: StoredTurn, status: StoredTurn['status']): StoredTurn {
    const at = new Date(this.#ctx.now()).toISOString();
    return { ...turn, status, endedAt: at, updatedAt: at };
  }

  /** The operator index says what the turn's record says now. */
  async #settle(turnId: string): Promise<void> {
    const [hash] = await this.#readTurn(turnId);
    if (hash['status'] !== undefined) await this.#operator.settle(toStoredTurn(hash));
  }

  async append(turnId: string, event: NewTurnEvent): Promise<TurnEvent> {
    return (await this.appendMany(turnId, [event]))[0] as TurnEvent;
  }

  /** One script run for the lot: the coalesced appends of a producer cost one round trip. */
  async appendMany(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]> {
    if (events.length === 0) return [];
    const bodies = events.map((event) => ({ body: JSON.stringify(event), endStatus: event.type === 'turn.end' ? event.status : '' }));
    const end = events.find((event) => event.type === 'turn.end');
    if (end?.type === 'turn.end') {
      const [hash] = await this.#readTurn(turnId);
      if (hash['status'] !== undefined) await this.#operator.enter(this.#ended(toStoredTurn(hash), end.status));
    }
    const result = await appendBodies(this.#ctx, this.#leases, turnId, bodies);
    if (result === 'unknown') throw new Error(`Turn ${turnId} is unknown or expired.`);
    if (typeof result !== 'number') throw new Error(`Turn ${turnId} has ended; its log is closed.`);
    if (end) await this.#settle(turnId);
    const first = result - bodies.length + 1;
    // Parsed back from what was stored, so the caller gets exactly what readers will get.
    return bodies.map(({ body }, i) => ({ turnId, seq: first + i, ...(JSON.parse(body) as object) }) as TurnEvent);
  }

  async read(turnId: string, after: number, limit: number, maxBytes = DEFAULT_PAGE_BYTES): Promise<EventPage> {
    const client = await this.#ctx.connection.client();
    const eventsKey = this.#ctx.keys.turn(turnId).events;
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

  /**
   * One look at the turn, then the waiter: while events flow that is all it costs. The
   * lease is only looked at when a wait passed with nothing new (at most a third of a
   * lease): then a lapsed one ends the turn here (`producer_lost`).
   */
  async waitForEvents(turnId: string, after: number, options: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    const { signal, timeoutMs } = options;
    const keys = this.#ctx.keys.turn(turnId);
    const deadline = Date.now() + timeoutMs;
    const checkEveryMs = Math.max(1, Math.floor(this.#ctx.leaseMs / 3));
    const client = await this.#ctx.connection.client();
    const [lastSeq, endedAt] = await client.hmget(keys.turn, 'lastSeq', 'endedAt');
    if (lastSeq === null || endedAt !== null || Number(lastSeq) > after) return;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted || this.#closed) return;
      const waiter = await this.#waiterFor();
      if (await waiter.wait(keys, after, signal, Math.min(remaining, checkEveryMs))) return;
      if (signal.aborted || this.#closed) return;
      // Two reads in one round trip; no MULTI needed, each answer stands on its own.
      const [[seq, ended], leased] = (await execAll(client.pipeline().hmget(keys.turn, 'lastSeq', 'endedAt').exists(keys.lease))) as [
        [string | null, string | null],
        number,
      ];
      if (seq === null || ended !== null || Number(seq) > after) return;
      if (leased === 0) {
        // Ends the turn (the caller then reads turn.end) or finds the producer alive again.
        const [hash] = await this.#readTurn(turnId);
        if (hash['status'] !== undefined && isLive(hash)) await this.#endLost(toStoredTurn(hash));
        return;
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

/** Waits for `work` at most `ms`; its failure or lateness is not the caller's concern. */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
