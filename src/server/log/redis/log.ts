import { randomUUID } from 'node:crypto';
import type { TurnEvent } from '../../../protocol/schemas.js';
import type { ReceiptBody } from '../../../protocol/server-schemas.js';
import { OperatorIndex } from '../operator-index.js';
import { decodeStop, encodeStop, recordDelivery } from './delivery.js';
import { RedisSortedSets } from './operator-sets.js';
import type { Cluster, Redis } from 'ioredis';
import { isLive, toStoredTurn, type TurnHash } from './codec.js';
import { openConnection } from './connection.js';
import type { RedisContext } from './context.js';
import { ConversationIndex } from './conversations.js';
import { IdempotencyLedger } from './idempotency.js';
import { keyNames, type TurnKeys } from './keys.js';
import { LeaseKeeper } from './leases.js';
import { resolveSettings, type RedisTurnLogOptions } from './options.js';
import { CREATE } from './scripts.js';
import { createShardWaiter } from './shard-waiter.js';
import { createStreamWaiter, type StreamEntry } from './stream-waiter.js';
import { liveHead, wokenEvents } from './wait-reads.js';
import { OwnAppends } from './own-appends.js';
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
  type OperatorQuery,
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


/** The Redis Streams {@link TurnLog}; `createRedisTurnLog` documents the layout. */
export class RedisTurnLog implements TurnLog {
  readonly #ctx: RedisContext;
  readonly #leases: LeaseKeeper;
  readonly #ledger: IdempotencyLedger;
  readonly #index: ConversationIndex;
  readonly #operator: OperatorIndex;
  readonly #writes: TurnWrites;
  readonly #own = new OwnAppends();
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
  async appendMany(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]> {
    const logged = await this.#writes.append(turnId, events);
    this.#own.appended(turnId, logged);
    return logged;
  }

  read(turnId: string, after: number, limit: number, maxBytes = DEFAULT_PAGE_BYTES): Promise<EventPage> {
    return readPage(this.#ctx, turnId, after, limit, maxBytes);
  }

  /**
   * One look at the turn (none after a fresh read: `justRead`), then the wait: while
   * events flow that is all it costs. A turn produced here is woken by its own appends
   * with their events (OwnAppends); any other by the waiter, whose XREAD on one Redis
   * brings the new events along. Either way the caller need not read them. The lease is
   * only looked at when a wait passed with nothing new (at most a third of a lease):
   * then a lapsed one ends the turn here (`producer_lost`).
   */
  async waitForEvents(turnId: string, after: number, options: WaitOptions): Promise<TurnEvent[] | undefined> {
    const { signal, timeoutMs } = options;
    const keys = this.#ctx.keys.turn(turnId);
    const deadline = Date.now() + timeoutMs;
    const checkEveryMs = Math.max(1, Math.floor(this.#ctx.leaseMs / 3));
    const client = this.#ctx.connection.clientNow() ?? (await this.#ctx.connection.client());
    if (options.justRead !== true) {
      const head = await liveHead(client, keys);
      if (head === undefined || head.seq > after) return undefined;
    }
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted || this.#closed) return undefined;
      const woken = await this.#waitOnce(turnId, keys, after, signal, Math.min(remaining, checkEveryMs));
      if (woken !== 'quiet') return woken;
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

  /** One wait: the events after `after` it brought, undefined when the caller should read, 'quiet' when nothing came. */
  async #waitOnce(turnId: string, keys: TurnKeys, after: number, signal: AbortSignal, ms: number): Promise<TurnEvent[] | undefined | 'quiet'> {
    const ownSeq = this.#leases.ownSeq(turnId);
    if (ownSeq === undefined) {
      let entries: StreamEntry[] | undefined;
      const waiter = await this.#waiterFor();
      const woken = await waiter.wait(keys, after, signal, ms, (brought) => void (entries = brought));
      return woken ? wokenEvents(turnId, after, entries) : 'quiet';
    }
    // Acknowledged before this wait began: the caller reads it.
    if (ownSeq > after) return undefined;
    const appended = await this.#own.wait(turnId, signal, ms);
    if (appended === undefined) return 'quiet';
    const from = after + 1 - (appended[0] as TurnEvent).seq;
    if (from >= 0 && from < appended.length) return appended.slice(from);
    // Events this follower had already (it read them before they were acknowledged), or a gap: Redis says.
    return (appended.at(-1) as TurnEvent).seq > after ? undefined : 'quiet';
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
    this.#own.close();
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
