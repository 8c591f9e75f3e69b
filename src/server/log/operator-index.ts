/**
 * The operator index (docs/protocol.md section 11): which turns are live, ended and not yet
 * delivered, mismatched or failed, so support tooling lists them with work proportional to
 * the turns listed, never a scan of every turn. Shared by every turn log; a store only
 * provides {@link SortedSets}.
 *
 * The index lives in keys of its own (their own slots on Redis Cluster), written in steps
 * apart from the turn's record, so it is a hint that is always checked: a turn is added to
 * the sets it is about to belong to BEFORE its record changes (so a turn in a state is
 * always listed under it), and taken out of the sets it left AFTER. A half-done write
 * leaves at most an extra entry, which a listing finds (the record says otherwise) and
 * repairs; no listing ever shows a turn in a state its record does not have.
 */
import type { OperatorState } from '../../protocol/server-schemas.js';
import { isExpiredTurn, type ExpiredTurn, type OperatorQuery, type StoredTurn } from './turn-log.js';


/** The sets a turn can be in; `ended`: ended, delivery still pending (the undelivered candidates). */
export type Bucket = 'live' | 'ended' | 'mismatch' | 'failed';
const BUCKETS: readonly Bucket[] = ['live', 'ended', 'mismatch', 'failed'];

export interface IndexEntry {
  id: string;
  score: number;
}

/** Named sorted sets of turn ids scored by ms since the epoch: the store's side of the index. */
export interface SortedSets {
  /** Adds `id` to every set in `sets` with `score` (or moves it to that score). */
  add(sets: readonly string[], id: string, score: number): Promise<void>;
  /** Takes `id` out of every set in `sets`. */
  remove(sets: readonly string[], id: string): Promise<void>;
  /** Newest first: entries with `min <= score <= max`, skipping `offset`, at most `count`. */
  range(set: string, min: number, max: number, offset: number, count: number): Promise<IndexEntry[]>;
  /** Drops entries scored below `before` (turns retention removed for certain). */
  trim(set: string, before: number): Promise<void>;
}

/** Reads a turn's record for the listing (a store may end a turn whose producer it finds gone). */
export type ResolveTurn = (turnId: string) => Promise<StoredTurn | ExpiredTurn | undefined>;

/** An entry without a record younger than this may be a turn being created right now: skipped, kept. */
const CREATING_GRACE_MS = 60_000;

const ms = (iso: string | undefined): number => {
  const value = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isFinite(value) ? value : 0;
};

/** True while the turn has no `turn.end`. */
export function isLiveTurn(turn: StoredTurn): boolean {
  return turn.endedAt === undefined && (turn.status === 'pending' || turn.status === 'streaming');
}

/** The sets a turn belongs in by its record, each with its score: when the turn entered that state. */
export function memberships(turn: StoredTurn): Map<Bucket, number> {
  const found = new Map<Bucket, number>();
  const delivery = turn.delivery?.state ?? 'pending';
  if (isLiveTurn(turn)) found.set('live', ms(turn.createdAt));
  else {
    const endedAt = ms(turn.endedAt ?? turn.updatedAt);
    if (delivery === 'pending') found.set('ended', endedAt);
    if (turn.status === 'failed') found.set('failed', endedAt);
  }
  if (delivery === 'mismatch') found.set('mismatch', ms(turn.delivery?.at ?? turn.updatedAt));
  return found;
}

/** The set names of one bucket: every turn, one principal's, one conversation's (of any principal). */
function setNames(bucket: Bucket, principal: string, conversationId: string): string[] {
  return [`${bucket}:all`, `${bucket}:p:${encodeURIComponent(principal)}`, `${bucket}:c:${conversationId}`];
}

function bucketOf(state: OperatorState): Bucket {
  if (state === 'live' || state === 'stuck') return 'live';
  return state === 'undelivered' ? 'ended' : state;
}

export class OperatorIndex {
  readonly #sets: SortedSets;
  readonly #retentionMs: number;
  readonly #now: () => number;

  constructor(sets: SortedSets, options: { retentionMs: number; now: () => number }) {
    this.#sets = sets;
    this.#retentionMs = options.retentionMs;
    this.#now = options.now;
  }

  /** Step one of a change: the turn joins the sets `turn` (its record to be) belongs in. */
  async enter(turn: StoredTurn): Promise<void> {
    await Promise.all(
      [...memberships(turn)].map(([bucket, score]) => this.#sets.add(setNames(bucket, turn.principal, turn.conversationId), turn.id, score)),
    );
  }

  /** Last step of a change (or a repair): the index says what the record `turn` says. */
  async settle(turn: StoredTurn): Promise<void> {
    const belongs = memberships(turn);
    const left = BUCKETS.filter((bucket) => !belongs.has(bucket)).flatMap((bucket) => setNames(bucket, turn.principal, turn.conversationId));
    await Promise.all([this.enter(turn), this.#sets.remove(left, turn.id)]);
  }

  /** The turn's record is gone (retention): it leaves every set. */
  async forget(turnId: string, principal: string, conversationId: string): Promise<void> {
    await this.#sets.remove(
      BUCKETS.flatMap((bucket) => setNames(bucket, principal, conversationId)),
      turnId,
    );
  }

  /** Newest first, at most `query.limit`, each checked against its record. */
  async list(query: OperatorQuery, resolve: ResolveTurn): Promise<StoredTurn[]> {
    const bucket = bucketOf(query.state);
    const set = this.#setFor(bucket, query);
    const now = this.#now();
    if (bucket !== 'live') await this.#sets.trim(set, now - this.#retentionMs);
    const max = query.state === 'undelivered' ? now - query.undeliveredAfterMs : Infinity;
    const min = query.sinceMs ?? -Infinity;
    const found: StoredTurn[] = [];
    for (let offset = 0; found.length < query.limit; ) {
      // Stuck turns are a few of the live ones: read those in larger pages.
      const count = query.state === 'stuck' ? 64 : Math.max(8, query.limit - found.length);
      const entries = await this.#sets.range(set, min, max, offset, count);
      if (entries.length === 0) break;
      const turns = await Promise.all(entries.map((entry) => resolve(entry.id)));
      let removed = 0;
      for (let i = 0; i < entries.length && found.length < query.limit; i++) {
        const verdict = await this.#check(set, bucket, entries[i] as IndexEntry, turns[i], query, now);
        if (verdict === 'removed') removed++;
        else if (verdict !== 'skip') found.push(verdict);
      }
      // Entries taken out of this set shift the ones after them down.
      offset += entries.length - removed;
      if (entries.length < count) break;
    }
    return found;
  }

  #setFor(bucket: Bucket, query: OperatorQuery): string {
    if (query.conversationId !== undefined) return `${bucket}:c:${query.conversationId}`;
    if (query.principal !== undefined) return `${bucket}:p:${encodeURIComponent(query.principal)}`;
    return `${bucket}:all`;
  }

  /** One entry against its record: listed, skipped, or repaired (`removed` when it left this set). */
  async #check(
    set: string,
    bucket: Bucket,
    entry: IndexEntry,
    turn: StoredTurn | ExpiredTurn | undefined,
    query: OperatorQuery,
    now: number,
  ): Promise<StoredTurn | 'skip' | 'removed'> {
    if (turn === undefined || isExpiredTurn(turn)) {
      // No record: being created (young, kept), or a create that failed half-way, or retention removed it.
      if (turn === undefined && entry.score > now - CREATING_GRACE_MS) return 'skip';
      await this.#sets.remove([set], entry.id);
      return 'removed';
    }
    if (!memberships(turn).has(bucket)) {
      await this.settle(turn);
      return 'removed';
    }
    if (query.principal !== undefined && turn.principal !== query.principal) return 'skip';
    if (query.conversationId !== undefined && turn.conversationId !== query.conversationId) return 'skip';
    if (query.state === 'stuck' && ms(turn.updatedAt) > now - query.stuckAfterMs) return 'skip';
    if (query.state === 'undelivered' && ms(turn.endedAt) > now - query.undeliveredAfterMs) return 'skip';
    return turn;
  }
}
