import type { TurnEvent } from '../../../protocol/schemas.js';
import type { ReceiptBody } from '../../../protocol/server-schemas.js';
import {
  applyReceipt,
  DEFAULT_PAGE_BYTES,
  eventSize,
  pendingTurn,
  type DeliveryOutcome,
  type EventPage,
  type ExpiredTurn,
  type NewTurn,
  type NewTurnEvent,
  type StopRequest,
  type StoredTurn,
} from '../turn-log.js';
import { Waiter } from '../waiters.js';

/**
 * A logged event without its turnId and seq (both implied by its position). Plain deltas,
 * nearly every event of a turn without the AI SDK, are kept as their bare text.
 */
type CompactEvent = string | NewTurnEvent;

interface Entry {
  turn: StoredTurn;
  events: CompactEvent[];
  endedAtMs: number | undefined;
  /** Set once a cancel or an operator's end was asked for. */
  stop: StopRequest | undefined;
  /** Pending `waitForEvents` calls; each removes itself when settled. */
  waiters: Set<Waiter>;
}

/** A delta as kept: its bare text when that is all it has; else a copy without a structured clone (an AI SDK delta names its part). */
function compactDelta({ text, partId, providerMetadata }: Extract<NewTurnEvent, { type: 'delta' }>): CompactEvent {
  if (partId === undefined && providerMetadata === undefined) return text;
  return { type: 'delta', text, ...(partId !== undefined && { partId }), ...(providerMetadata !== undefined && { providerMetadata: structuredClone(providerMetadata) }) };
}

function expand(turnId: string, index: number, event: CompactEvent): TurnEvent {
  const seq = index + 1;
  if (typeof event === 'string') return { turnId, seq, type: 'delta', text: event };
  return { turnId, seq, ...event } as TurnEvent;
}

function wake(entry: Entry): void {
  // Copy: each waiter deletes itself from the set while we iterate.
  for (const waiter of [...entry.waiters]) waiter.settle();
}

/**
 * The turns of the memory log: records, event logs, waiters, and a conversation index
 * per principal (like Redis's), so listing one principal's conversation never visits
 * another principal's turns. An ended turn is removed `retentionMs` after `turn.end`;
 * a tombstone (with its principal) answers for it one more retention period.
 */
export class MemoryTurnStore {
  readonly #retentionMs: number;
  readonly #now: () => number;
  readonly #turns = new Map<string, Entry>();
  /** Swept turn id → when it was swept and whose it was (another principal still gets 404). */
  readonly #tombstones = new Map<string, { sweptAt: number; principal: string }>();
  /** Principal → conversation id → its turn ids, oldest first. */
  readonly #conversations = new Map<string, Map<string, string[]>>();

  /** Told of every turn retention removes (the operator index forgets it). */
  readonly #onRemove: (turn: StoredTurn) => void;

  constructor(retentionMs: number, now: () => number, onRemove: (turn: StoredTurn) => void = () => undefined) {
    this.#retentionMs = retentionMs;
    this.#now = now;
    this.#onRemove = onRemove;
  }

  create(init: NewTurn): StoredTurn {
    if (this.#turns.has(init.id) || this.#tombstones.has(init.id)) throw new Error(`Turn ${init.id} already exists.`);
    const turn = pendingTurn(init);
    this.#turns.set(init.id, { turn, events: [], endedAtMs: undefined, stop: undefined, waiters: new Set() });
    let byConversation = this.#conversations.get(init.principal);
    if (!byConversation) this.#conversations.set(init.principal, (byConversation = new Map()));
    const ids = byConversation.get(init.conversationId);
    if (ids) ids.push(init.id);
    else byConversation.set(init.conversationId, [init.id]);
    return { ...turn };
  }

  get(turnId: string): StoredTurn | ExpiredTurn | undefined {
    const entry = this.#live(turnId);
    if (entry) return { ...entry.turn };
    const tombstone = this.#tombstones.get(turnId);
    return tombstone ? { expired: true, principal: tombstone.principal } : undefined;
  }

  /** True while the turn's record is kept (live, or ended within retention). */
  has(turnId: string): boolean {
    return this.#turns.has(turnId);
  }

  append(turnId: string, event: NewTurnEvent): TurnEvent {
    const entry = this.#live(turnId);
    if (!entry) throw new Error(`Turn ${turnId} is unknown or expired.`);
    if (entry.endedAtMs !== undefined) throw new Error(`Turn ${turnId} has ended; its log is closed.`);
    // Own copy: the caller may reuse or mutate the object it passed in.
    const compact: CompactEvent = event.type === 'delta' ? compactDelta(event) : structuredClone(event);
    entry.events.push(compact);
    const { turn } = entry;
    turn.lastSeq = entry.events.length;
    turn.updatedAt = new Date(this.#now()).toISOString();
    if (event.type === 'turn.end') {
      turn.status = event.status;
      turn.endedAt = turn.updatedAt;
      turn.textSha256 = event.textSha256;
      entry.endedAtMs = this.#now();
    } else {
      turn.status = 'streaming';
    }
    wake(entry);
    return expand(turnId, turn.lastSeq - 1, compact);
  }

  read(turnId: string, after: number, limit: number, maxBytes = DEFAULT_PAGE_BYTES): EventPage {
    const entry = this.#live(turnId);
    if (!entry) return { events: [], hasMore: false };
    const end = Math.min(entry.events.length, Math.max(0, after) + limit);
    const events: TurnEvent[] = [];
    let bytes = 0;
    let i = Math.max(0, after);
    for (; i < end; i++) {
      const event = expand(turnId, i, entry.events[i] as CompactEvent);
      bytes += eventSize(event);
      if (events.length > 0 && bytes > maxBytes) break;
      events.push(event);
    }
    return { events, hasMore: i < entry.events.length };
  }

  waitForEvents(turnId: string, after: number, { signal, timeoutMs }: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    const entry = this.#live(turnId);
    if (!entry || entry.events.length > after || entry.endedAtMs !== undefined || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => new Waiter(entry.waiters, signal, timeoutMs, resolve));
  }

  list(conversationId: string, principal: string, limit: number): StoredTurn[] {
    const ids = this.#conversations.get(principal)?.get(conversationId) ?? [];
    const found: StoredTurn[] = [];
    for (let i = ids.length - 1; i >= 0 && found.length < limit; i--) {
      const entry = this.#turns.get(ids[i] as string);
      if (entry && !this.#expired(entry)) found.push({ ...entry.turn });
    }
    return found;
  }

  /** A cancel or an operator's end; the first one asked for wins. */
  requestStop(turnId: string, stop: StopRequest): void {
    const entry = this.#live(turnId);
    if (entry) entry.stop ??= stop;
  }

  stopRequest(turnId: string): StopRequest | undefined {
    return this.#turns.get(turnId)?.stop;
  }

  /** A delivery receipt (section 10), checked and recorded in one step. */
  recordDelivery(turnId: string, receipt: ReceiptBody, at: string): DeliveryOutcome {
    const entry = this.#live(turnId);
    if (!entry) return { kind: 'unknown' };
    const { outcome, delivery } = applyReceipt(entry.turn, receipt, at);
    if (delivery) entry.turn.delivery = delivery;
    return { kind: outcome, turn: { ...entry.turn } } as DeliveryOutcome;
  }

  /** Removes expired turns, and tombstones older than one more retention period. */
  sweep(): void {
    const at = this.#now();
    for (const [turnId, entry] of this.#turns) if (this.#expired(entry)) this.#remove(turnId, entry);
    for (const [turnId, { sweptAt }] of this.#tombstones) if (at - sweptAt >= this.#retentionMs) this.#tombstones.delete(turnId);
  }

  /** Wakes every waiter (the log is closing). */
  wakeAll(): void {
    for (const entry of this.#turns.values()) wake(entry);
  }

  #expired(entry: Entry): boolean {
    return entry.endedAtMs !== undefined && this.#now() - entry.endedAtMs >= this.#retentionMs;
  }

  /** The entry of a turn that is still retained, removing it if it just expired. */
  #live(turnId: string): Entry | undefined {
    const entry = this.#turns.get(turnId);
    if (entry && this.#expired(entry)) {
      this.#remove(turnId, entry);
      return undefined;
    }
    return entry;
  }

  #remove(turnId: string, entry: Entry): void {
    const { principal, conversationId } = entry.turn;
    this.#turns.delete(turnId);
    this.#tombstones.set(turnId, { sweptAt: this.#now(), principal });
    this.#onRemove(entry.turn);
    const byConversation = this.#conversations.get(principal);
    const ids = byConversation?.get(conversationId);
    if (byConversation && ids) {
      // Turns expire roughly in creation order, so this is usually found at the front.
      const at = ids.indexOf(turnId);
      if (at >= 0) ids.splice(at, 1);
      if (ids.length === 0) byConversation.delete(conversationId);
      if (byConversation.size === 0) this.#conversations.delete(principal);
    }
    wake(entry);
  }
}
