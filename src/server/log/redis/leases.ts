import type { RedisContext } from './context.js';
import { DELETE_IF_SAME, RENEW, TOUCH_IDEMPOTENCY } from './scripts.js';

/** What this instance knows about a turn it produces, to keep its keys alive. */
interface OwnedTurn {
  /** `performance.now()` when its keys' TTLs were last refreshed (claim or full renewal). */
  refreshedAt: number;
  conversationKey: string;
  idempotencyKey?: string;
  /** Highest seq an append of this instance was acknowledged with. */
  lastSeq: number;
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

  /** A turn this instance just created. */
  claim(turnId: string, conversationKey: string): void {
    this.#owned.set(turnId, { refreshedAt: performance.now(), conversationKey, lastSeq: 0 });
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
   * This instance will not produce the turn (its submission failed after the turn was
   * created): its lease is given up, so the next look by any instance ends it
   * `producer_lost` instead of it being renewed forever.
   */
  async release(turnId: string): Promise<void> {
    if (!this.#owned.delete(turnId)) return;
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
    const { connection, keys, leaseMs, report } = this.#ctx;
    try {
      if (performance.now() - owned.refreshedAt < REFRESH_KEYS_MS) {
        // Only this instance ever sets this lease, so extending it needs no owner check;
        // 0 means it lapsed (or the turn ended): the full renewal below decides.
        const client = await connection.client();
        if ((await client.pexpire(keys.turn(turnId).lease, leaseMs)) === 1) return;
      }
      await this.#refresh(turnId, owned);
    } catch (error) {
      report(error, { phase: 'store', turnId });
    }
  }

  /** The lease taken (back) and every TTL of the turn refreshed; forgets a turn that ended. */
  async #refresh(turnId: string, owned: OwnedTurn): Promise<void> {
    const { connection, keys, owner, leaseMs, liveTtlMs, retentionMs, indexTtlMs } = this.#ctx;
    const turnKeys = keys.turn(turnId);
    const held = await connection.run(
      RENEW,
      [turnKeys.turn, turnKeys.events, turnKeys.lease, turnKeys.cancel, turnKeys.gone],
      [owner, leaseMs, liveTtlMs, liveTtlMs + retentionMs],
    );
    if (held !== 1) {
      this.#owned.delete(turnId);
      return;
    }
    owned.refreshedAt = performance.now();
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
