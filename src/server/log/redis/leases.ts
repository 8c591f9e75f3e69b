import type { StoredTurn } from '../turn-log.js';
import type { RedisContext } from './context.js';
import { DELETE_IF_SAME, RENEW, TOUCH_IDEMPOTENCY } from './scripts.js';

/** What this instance knows about a turn it produces, to keep its keys alive and answer for it. */
interface OwnedTurn {
  /** `performance.now()` when its keys' TTLs were last refreshed (claim or full renewal). */
  refreshedAt: number;
  conversationKey: string;
  idempotencyKey?: string;
  /** The turn as its last acknowledged append left it; its lastSeq is the highest seq acknowledged here. */
  turn: StoredTurn;
  /** False once an append or renewal failed, was retried or surprised us: Redis may hold something else. */
  exact: boolean;
  /** Appends of the turn sent and not answered yet. */
  appending: number;
  /** Who waits for them all to be answered (or `exact` to go false); made only when someone does, not per append. */
  answered?: (() => void)[] | undefined;
  /** `performance.now()` when the last command that set or extended the lease, and was answered so, was sent. */
  heldSince: number;
}

/**
 * The keys of a live turn live for `retentionMs + leaseMs` (a day by default), so their
 * TTLs need refreshing far less often than the lease: once a minute, or at once when the
 * lease was found gone.
 */
const REFRESH_KEYS_MS = 60_000;

/**
 * The producer leases this instance holds. From the moment a turn is claimed (created
 * here) until it ends or is released, every `leaseMs / 4` its lease is extended (one
 * `PEXPIRE`); about once a minute the turn's keys' TTLs are refreshed too, with its
 * conversation index and idempotency record (each its own slot on a cluster, so its own
 * command). Renewal does not wait for the turn's first event: a slow `turn.start` never
 * loses a healthy turn. A turn created here that will not be produced is `release`d.
 */
export class LeaseKeeper {
  readonly #ctx: RedisContext;
  readonly #owned = new Map<string, OwnedTurn>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewing = false;
  #stopped = false;

  constructor(ctx: RedisContext) {
    this.#ctx = ctx;
  }

  /** A turn this instance just created (`pending`), its lease set by a command sent at `sentAt`. */
  claim(turnId: string, conversationKey: string, turn: StoredTurn, sentAt: number): void {
    this.#owned.set(turnId, { refreshedAt: performance.now(), conversationKey, turn, exact: true, appending: 0, heldSince: sentAt });
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.#renew(), renewEveryMs(this.#ctx.leaseMs));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** The idempotency record that names the turn, kept alive with it. */
  attachIdempotency(turnId: string, idempotencyKey: string): void {
    const owned = this.#owned.get(turnId);
    if (owned) owned.idempotencyKey = idempotencyKey;
  }

  /**
   * The turn as Redis holds it now, without asking Redis, when this instance can know:
   * it produces the turn, no append of it failed or is being retried, and the lease was
   * extended less than half a lease ago. While the lease is held nobody else writes the
   * turn (the producer-loss end needs it lapsed; receipts only touch ended turns), so the
   * record is what our own last append left; an append on its way is waited for (its
   * events may be read already). Undefined when in any doubt: then Redis is asked.
   */
  async known(turnId: string): Promise<StoredTurn | undefined> {
    for (let waits = 0; ; waits++) {
      const owned = this.#owned.get(turnId);
      if (owned === undefined || !owned.exact || this.#stopped) return undefined;
      if (owned.appending === 0) {
        if (performance.now() - owned.heldSince >= this.#ctx.leaseMs / 2) return undefined;
        return { ...owned.turn, delivery: { state: 'pending' } };
      }
      // Appends back to back: one more wait would be longer than asking.
      if (waits === 2) return undefined;
      await new Promise<void>((resolve) => (owned.answered ??= []).push(resolve));
    }
  }

  /**
   * The highest seq acknowledged here for a turn this instance produces, while it holds
   * the lease and nothing made it doubt what Redis holds; undefined otherwise. Then no
   * other instance writes the turn (see `known`), so its appends here are all there is.
   */
  ownSeq(turnId: string): number | undefined {
    const owned = this.#owned.get(turnId);
    return owned === undefined || !owned.exact || this.#stopped ? undefined : owned.turn.lastSeq;
  }

  /** An append of the turn is sent (`started`) or answered, whichever way (`!started`). */
  appending(turnId: string, started: boolean): void {
    const owned = this.#owned.get(turnId);
    if (owned === undefined) return;
    owned.appending += started ? 1 : -1;
    if (owned.appending === 0) this.#answered(owned);
  }

  /** Something happened to the turn in Redis that this instance did not see the end of: ask Redis from now on. */
  distrust(turnId: string): void {
    const owned = this.#owned.get(turnId);
    if (owned === undefined) return;
    owned.exact = false;
    this.#answered(owned);
  }

  /** A connection was lost or the cluster moved: what any turn's record holds is Redis's to say again. */
  distrustAll(): void {
    for (const turnId of this.#owned.keys()) this.distrust(turnId);
  }

  /** No longer ours; whoever waits for its append asks Redis. */
  #drop(turnId: string): boolean {
    const owned = this.#owned.get(turnId);
    if (owned !== undefined) this.#answered(owned);
    return this.#owned.delete(turnId);
  }

  #answered(owned: OwnedTurn): void {
    const waiting = owned.answered;
    owned.answered = undefined;
    for (const resolve of waiting ?? []) resolve();
  }

  /**
   * Notes the seq an append of a turn produced here was acknowledged with (`at` its
   * updatedAt). False when it is not past the previous one: the log lost acknowledged
   * events (a master failed over before its replica had them), so the seqs this instance
   * handed out are being reused. The next append is judged against this one, so the
   * producer can still end the turn.
   */
  acknowledge(turnId: string, seq: number, at: string): boolean {
    const owned = this.#owned.get(turnId);
    if (!owned) return true;
    const ahead = seq > owned.turn.lastSeq;
    // In place, not a copy per append: `known` answers copies, so nobody else holds this object.
    owned.turn.status = 'streaming';
    owned.turn.lastSeq = seq;
    owned.turn.updatedAt = at;
    if (!ahead) owned.exact = false;
    return ahead;
  }

  /** The turn ended; nothing to renew. */
  forget(turnId: string): void {
    this.#drop(turnId);
  }

  /**
   * This instance will not produce the turn (its submission failed after the turn was
   * created): its lease is given up, so the next look by any instance ends it
   * `producer_lost` instead of it being renewed forever.
   */
  async release(turnId: string): Promise<void> {
    if (!this.#drop(turnId)) return;
    const { connection, keys, owner } = this.#ctx;
    await connection.run(DELETE_IF_SAME, [keys.turn(turnId).lease], [owner]);
  }

  /**
   * Stops renewing and gives up every lease still held, so another instance ends those
   * turns (`producer_lost`) on its next look instead of after the lease time.
   */
  async releaseAll(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const owned = [...this.#owned.keys()];
    for (const turnId of owned) this.#drop(turnId);
    const { connection, keys, owner, report } = this.#ctx;
    await Promise.all(
      owned.map((turnId) =>
        connection.run(DELETE_IF_SAME, [keys.turn(turnId).lease], [owner]).catch((error: unknown) => report(error, { phase: 'store', turnId })),
      ),
    );
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#stopped) return;
    this.#renewing = true;
    try {
      await Promise.all([...this.#owned].map(([turnId, owned]) => this.#renewOne(turnId, owned)));
    } finally {
      this.#renewing = false;
      if (this.#owned.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    }
  }

  async #renewOne(turnId: string, owned: OwnedTurn): Promise<void> {
    const { connection, keys, leaseMs, report } = this.#ctx;
    try {
      if (performance.now() - owned.refreshedAt < REFRESH_KEYS_MS) {
        // Only this instance ever sets this lease, so extending it needs no owner check;
        // 0 means it lapsed (or the turn ended): the full renewal below decides.
        const client = await connection.client();
        const sentAt = performance.now();
        if ((await client.pexpire(keys.turn(turnId).lease, leaseMs)) === 1) {
          owned.heldSince = sentAt;
          return;
        }
        // Lapsed: another instance may have ended the turn meanwhile.
        owned.exact = false;
      }
      await this.#refresh(turnId, owned);
    } catch (error) {
      owned.exact = false;
      report(error, { phase: 'store', turnId });
    }
  }

  /** The lease taken (back) and every TTL of the turn refreshed; forgets a turn that ended. */
  async #refresh(turnId: string, owned: OwnedTurn): Promise<void> {
    const { connection, keys, owner, leaseMs, liveTtlMs, retentionMs, indexTtlMs } = this.#ctx;
    const turnKeys = keys.turn(turnId);
    const sentAt = performance.now();
    const held = await connection.run(
      RENEW,
      [turnKeys.turn, turnKeys.events, turnKeys.lease, turnKeys.cancel, turnKeys.gone],
      [owner, leaseMs, liveTtlMs, liveTtlMs + retentionMs],
    );
    if (held !== 1) {
      this.#drop(turnId);
      return;
    }
    owned.refreshedAt = performance.now();
    owned.heldSince = sentAt;
    const client = await connection.client();
    await Promise.all([
      client.pexpire(owned.conversationKey, indexTtlMs),
      owned.idempotencyKey === undefined ? undefined : connection.run(TOUCH_IDEMPOTENCY, [owned.idempotencyKey], [turnId, liveTtlMs]),
    ]);
  }
}

/** How often a held lease is extended: four times per lease, so one late renewal never lets it lapse. */
export function renewEveryMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 4));
}
