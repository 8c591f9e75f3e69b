import type { RedisContext } from './context.js';
import { DELETE_IF_SAME, RENEW, TOUCH_IDEMPOTENCY } from './scripts.js';

/** What this instance knows about a turn it produces, to keep its keys alive. */
interface OwnedTurn {
  /** `Date.now()` when this instance created it. */
  claimedAt: number;
  conversationKey: string;
  idempotencyKey?: string;
  /** Highest seq an append of this instance was acknowledged with. */
  lastSeq: number;
}

/**
 * The producer leases this instance holds. Every `leaseMs / 3` each live turn it created
 * gets its lease renewed and its keys' TTLs refreshed, together with its conversation
 * index and idempotency record (each its own slot on a cluster, so its own command).
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

  /** A turn this instance just created. */
  claim(turnId: string, conversationKey: string): void {
    this.#owned.set(turnId, { claimedAt: Date.now(), conversationKey, lastSeq: 0 });
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.#renew(), Math.max(1, Math.floor(this.#ctx.leaseMs / 3)));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** The idempotency record that names the turn, kept alive with it. */
  attachIdempotency(turnId: string, idempotencyKey: string): void {
    const owned = this.#owned.get(turnId);
    if (owned) owned.idempotencyKey = idempotencyKey;
  }

  /**
   * Notes the seq an append of a turn produced here was acknowledged with. False when it
   * is not past the previous one: the log lost acknowledged events (a master failed over
   * before its replica had them), so the seqs this instance handed out are being reused.
   * The next append is judged against this one, so the producer can still end the turn.
   */
  acknowledge(turnId: string, seq: number): boolean {
    const owned = this.#owned.get(turnId);
    if (!owned) return true;
    const ahead = seq > owned.lastSeq;
    owned.lastSeq = seq;
    return ahead;
  }

  /** The turn ended; nothing to renew. */
  forget(turnId: string): void {
    this.#owned.delete(turnId);
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
    this.#owned.clear();
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
    const { connection, keys, owner, leaseMs, liveTtlMs, retentionMs, indexTtlMs, report } = this.#ctx;
    const turnKeys = keys.turn(turnId);
    try {
      const held = await connection.run(
        RENEW,
        [turnKeys.turn, turnKeys.events, turnKeys.lease, turnKeys.cancel, turnKeys.gone],
        [
          owner,
          leaseMs,
          liveTtlMs,
          liveTtlMs + retentionMs,
          // A producer logs turn.start first thing; a turn without one after a whole
          // lease was created but never started here (its request failed half-way).
          Date.now() - owned.claimedAt > leaseMs ? '1' : '0',
        ],
      );
      if (held === -1) {
        report(new Error(`Turn ${turnId} was created but never started; its lease is left to lapse (it will end producer_lost).`), {
          phase: 'store',
          turnId,
        });
      }
      if (held !== 1) {
        this.#owned.delete(turnId);
        return;
      }
      const client = await connection.client();
      await Promise.all([
        client.pexpire(owned.conversationKey, indexTtlMs),
        owned.idempotencyKey === undefined ? undefined : connection.run(TOUCH_IDEMPOTENCY, [owned.idempotencyKey], [turnId, liveTtlMs]),
      ]);
    } catch (error) {
      report(error, { phase: 'store', turnId });
    }
  }
}
