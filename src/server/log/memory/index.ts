import { MemoryIdempotencyLedger } from './idempotency.js';
import { MemoryTurnStore } from './turn-store.js';
import type { EventPage, ExpiredTurn, IdempotencyRecord, NewTurn, NewTurnEvent, StoredTurn, TurnLog } from '../turn-log.js';
import type { TurnEvent } from '../../../protocol/schemas.js';
import type { ReceiptBody } from '../../../protocol/server-schemas.js';
import { OperatorIndex } from '../operator-index.js';
import type { DeliveryOutcome, OperatorQuery, StopRequest } from '../turn-log.js';
import { MemorySortedSets } from './sorted-sets.js';

/** Options of {@link createMemoryTurnLog}. */
export interface MemoryTurnLogOptions {
  /** How long an ended turn's log and its idempotency keys are kept, ms. Default 24 h. */
  retentionMs?: number;
  /** How often expired turns are swept, ms. Default 60 000 (the timer never keeps a process alive). */
  sweepIntervalMs?: number;
  /** Clock for retention and `updatedAt`, ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** The embedded {@link TurnLog}: one process, no persistence. */
export interface MemoryTurnLog extends TurnLog {
  /** Removes expired turns and keys now (also runs every `sweepIntervalMs`). */
  sweep(): void;
}

/** 24 hours, the protocol's reference retention. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * The turn store and the key ledger behind the async {@link TurnLog} face, swept on a
 * timer. Fields are TS-private rather than `#private` so a log wrapped by prototype
 * (`Object.create(log)` with a method overridden) keeps working.
 */
class InMemoryTurnLog implements MemoryTurnLog {
  private readonly turns: MemoryTurnStore;
  private readonly keys: MemoryIdempotencyLedger;
  private readonly index: OperatorIndex;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(options: MemoryTurnLogOptions) {
    const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    const now = options.now ?? Date.now;
    this.index = new OperatorIndex(new MemorySortedSets(), { retentionMs, now });
    this.turns = new MemoryTurnStore(retentionMs, now, (turn) => void this.index.forget(turn.id, turn.principal, turn.conversationId));
    this.keys = new MemoryIdempotencyLedger(retentionMs, now);
    this.timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    (this.timer as { unref?: () => void }).unref?.();
  }

  // One process: a change and its index step cannot be torn apart, so the index follows each change.
  async createTurn(init: NewTurn): Promise<StoredTurn> {
    const turn = this.turns.create(init);
    await this.index.settle(turn);
    return turn;
  }

  async getTurn(turnId: string): Promise<StoredTurn | ExpiredTurn | undefined> {
    return this.turns.get(turnId);
  }

  async append(turnId: string, event: NewTurnEvent): Promise<TurnEvent> {
    const logged = this.turns.append(turnId, event);
    if (event.type === 'turn.end') await this.reindex(turnId);
    return logged;
  }

  async recordDelivery(turnId: string, receipt: ReceiptBody, at: string): Promise<DeliveryOutcome> {
    const outcome = this.turns.recordDelivery(turnId, receipt, at);
    if (outcome.kind !== 'unknown') await this.index.settle(outcome.turn);
    return outcome;
  }

  listOperatorTurns(query: OperatorQuery): Promise<StoredTurn[]> {
    // Through `this`, so a log wrapped by prototype sees (and may count) every read.
    return this.index.list(query, (turnId) => this.getTurn(turnId));
  }

  private async reindex(turnId: string): Promise<void> {
    const turn = this.turns.get(turnId);
    if (turn && !('expired' in turn)) await this.index.settle(turn);
  }

  /** Through `append`, so a log wrapped by prototype with `append` overridden sees every event. */
  async appendMany(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]> {
    const logged: TurnEvent[] = [];
    for (const event of events) logged.push(await this.append(turnId, event));
    return logged;
  }

  async read(turnId: string, after: number, limit: number, maxBytes?: number): Promise<EventPage> {
    return this.turns.read(turnId, after, limit, maxBytes);
  }

  waitForEvents(turnId: string, after: number, options: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    return this.turns.waitForEvents(turnId, after, options);
  }

  async listTurns(conversationId: string, principal: string, limit: number): Promise<StoredTurn[]> {
    return this.turns.list(conversationId, principal, limit);
  }

  async getIdempotency(principal: string, key: string): Promise<IdempotencyRecord | undefined> {
    return this.keys.get(principal, key);
  }

  async putIdempotencyIfAbsent(principal: string, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return this.keys.putIfAbsent(principal, key, record);
  }

  async completeIdempotency(principal: string, key: string, record: IdempotencyRecord): Promise<void> {
    this.keys.complete(principal, key, record);
  }

  async deleteIdempotency(principal: string, key: string): Promise<void> {
    this.keys.delete(principal, key);
  }

  async requestCancel(turnId: string): Promise<void> {
    this.turns.requestStop(turnId, { kind: 'cancel' });
  }

  async isCancelRequested(turnId: string): Promise<boolean> {
    return this.turns.stopRequest(turnId) !== undefined;
  }

  async requestStop(turnId: string, stop: StopRequest): Promise<void> {
    this.turns.requestStop(turnId, stop);
  }

  async stopRequest(turnId: string): Promise<StopRequest | undefined> {
    return this.turns.stopRequest(turnId);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.turns.wakeAll();
  }

  sweep(): void {
    this.turns.sweep();
    this.keys.sweep((turnId) => this.turns.has(turnId));
  }
}

/**
 * Creates the in-memory turn log the handler uses by default. Ended turns and their
 * idempotency keys are kept for `retentionMs` after `turn.end`; after that
 * `getTurn` answers an expired turn (from a small tombstone kept for one more
 * retention period, then the id is simply unknown).
 *
 * @example
 * const store = createMemoryTurnLog({ retentionMs: 60 * 60 * 1000 });
 * const handler = createLifelineHandler({ store, agent });
 */
export function createMemoryTurnLog(options: MemoryTurnLogOptions = {}): MemoryTurnLog {
  return new InMemoryTurnLog(options);
}
