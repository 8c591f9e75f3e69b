import type { TurnEvent } from '../../../protocol/schemas.js';
import type { OperatorIndex } from '../operator-index.js';
import type { NewTurnEvent, StoredTurn } from '../turn-log.js';
import { appendBodies, endIfProducerLost } from './append.js';
import { current, execAll, headOf, loggedEvent, toStoredTurn, type TurnHash } from './codec.js';
import type { RedisContext } from './context.js';
import { runThroughFailover } from './failover.js';
import type { LeaseKeeper } from './leases.js';

/**
 * The turn's record as of its newest entry (see `current`), whether its lease is held,
 * and its tombstone (its principal). One round trip, no transaction: the record is read
 * first, so a stream read a moment later can only be newer, and `current` lets it win; a
 * lease seen gone just before an end is read with that end.
 */
export async function readTurn(ctx: RedisContext, turnId: string): Promise<[TurnHash, boolean, string | null]> {
  const keys = ctx.keys.turn(turnId);
  const client = await ctx.connection.client();
  const pipeline = client.pipeline().hgetall(keys.turn).exists(keys.lease).get(keys.gone).xrevrange(keys.events, '+', '-', 'COUNT', 1);
  const [hash, leased, gone, newest] = (await execAll(pipeline)) as [TurnHash, number, string | null, [string, string[]][]];
  return [current(hash, headOf(newest)), leased === 1, gone];
}

/**
 * The writes that change a turn's record, with the operator index moved around them
 * (docs/protocol.md section 11): into the sets the turn is about to belong to before
 * the write, out of the ones it left after. The index sits in other slots than the turn
 * (other masters on a cluster), so each of those steps runs through a failover like the
 * append itself: one of them failing would fail an append that could have landed.
 */
export class TurnWrites {
  readonly #ctx: RedisContext;
  readonly #leases: LeaseKeeper;
  readonly #operator: OperatorIndex;

  constructor(ctx: RedisContext, leases: LeaseKeeper, operator: OperatorIndex) {
    this.#ctx = ctx;
    this.#leases = leases;
    this.#operator = operator;
  }

  /** One script run for the lot: the coalesced appends of a producer cost one round trip. */
  async append(turnId: string, events: readonly NewTurnEvent[]): Promise<TurnEvent[]> {
    if (events.length === 0) return [];
    const bodies = events.map((event) => ({ body: JSON.stringify(event), endStatus: event.type === 'turn.end' ? event.status : '' }));
    const end = events.find((event) => event.type === 'turn.end');
    if (end?.type === 'turn.end') {
      await runThroughFailover(this.#ctx, async () => {
        const [hash] = await readTurn(this.#ctx, turnId);
        if (hash['status'] !== undefined) await this.#operator.enter(this.#ended(toStoredTurn(hash), end.status));
      });
    }
    const result = await appendBodies(this.#ctx, this.#leases, turnId, bodies);
    if (result === 'unknown') throw new Error(`Turn ${turnId} is unknown or expired.`);
    if (typeof result !== 'number') throw new Error(`Turn ${turnId} has ended; its log is closed.`);
    if (end) await this.#settle(turnId);
    const first = result - bodies.length + 1;
    // What readers will get (see loggedEvent): the caller hands these to this instance's followers.
    return bodies.map(({ body }, i) => loggedEvent(turnId, first + i, events[i] as NewTurnEvent, body));
  }

  /** Ends a turn whose producer lease lapsed (see endIfProducerLost), the index moved around it. */
  async endLost(turn: StoredTurn): Promise<void> {
    await runThroughFailover(this.#ctx, () => this.#operator.enter(this.#ended(turn, 'failed')));
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
    await runThroughFailover(this.#ctx, async () => {
      const [hash] = await readTurn(this.#ctx, turnId);
      if (hash['status'] !== undefined) await this.#operator.settle(toStoredTurn(hash));
    });
  }
}
