import type { TurnEvent } from '../../../protocol/schemas.js';
import { Waiter } from '../waiters.js';

/**
 * Wakes the followers on this instance of a turn this instance produces, from its own
 * appends, without asking Redis. While this instance holds a turn's lease and trusts
 * what it knows of it (`LeaseKeeper.ownSeq`), nobody else appends to the turn: the only
 * other writer, the producer-loss end, needs the lease lapsed. So each append hands its
 * events to the followers here, and the turn stays out of the blocking XREAD, which
 * would otherwise return, be decoded and be sent again after every append: one command,
 * one round trip and one reply fewer per append.
 *
 * What the lease cannot rule out (it lapsed unnoticed, a failover lost writes) is found
 * when a wait times out: the caller then looks at the turn in Redis, as after any quiet
 * wait, at most a third of a lease or one heartbeat later.
 */
export class OwnAppends {
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** The events of the append whose waiters are being settled, while `appended` runs. */
  #appending: readonly TurnEvent[] | undefined;

  /**
   * Resolves with the events of the next append of `turnId` here; undefined at the
   * timeout, on abort, or when the log closes.
   */
  async wait(turnId: string, signal: AbortSignal, timeoutMs: number): Promise<readonly TurnEvent[] | undefined> {
    let waiters = this.#waiters.get(turnId);
    if (waiters === undefined) this.#waiters.set(turnId, (waiters = new Set()));
    let appended: readonly TurnEvent[] | undefined;
    await new Promise<void>(
      (resolve) =>
        new Waiter(waiters, signal, timeoutMs, () => {
          appended = this.#appending;
          resolve();
        }),
    );
    if (waiters.size === 0 && this.#waiters.get(turnId) === waiters) this.#waiters.delete(turnId);
    return appended;
  }

  /** An append of `turnId` here was acknowledged with `events`: its waiters here take them. */
  appended(turnId: string, events: readonly TurnEvent[]): void {
    const waiters = this.#waiters.get(turnId);
    if (waiters === undefined || events.length === 0) return;
    this.#appending = events;
    try {
      for (const waiter of [...waiters]) waiter.settle();
    } finally {
      this.#appending = undefined;
    }
  }

  /** Settles every wait with nothing. */
  close(): void {
    for (const waiters of [...this.#waiters.values()]) for (const waiter of [...waiters]) waiter.settle();
  }
}
