/** The waits parked on one abort signal, settled together when it aborts. */
const bySignal = new WeakMap<AbortSignal, Set<Waiter>>();

function settleAll(waiters: Set<Waiter>): void {
  for (const waiter of [...waiters]) waiter.settle();
}

function timedOut(waiter: Waiter): void {
  waiter.settle();
}

/**
 * One pending `waitForEvents` of the memory log, or of the Redis log for a turn produced
 * by its own instance (redis/own-appends.ts). A live turn's feed waits between every
 * two pages, so a wait costs no closure and no listener of its own: one abort listener
 * per signal serves every wait made with it (a feed makes all its waits with one), and
 * the timeout is a timer with the waiter as its argument. Settles once: on an append, at
 * the timeout, when the signal aborts, or when the log closes.
 */
export class Waiter {
  readonly #turnWaiters: Set<Waiter>;
  readonly #signalWaiters: Set<Waiter>;
  readonly #resolve: () => void;
  readonly #timer: ReturnType<typeof setTimeout>;
  #settled = false;

  constructor(turnWaiters: Set<Waiter>, signal: AbortSignal, timeoutMs: number, resolve: () => void) {
    this.#turnWaiters = turnWaiters;
    this.#resolve = resolve;
    let signalWaiters = bySignal.get(signal);
    if (signalWaiters === undefined) {
      const waiters = (signalWaiters = new Set());
      bySignal.set(signal, waiters);
      signal.addEventListener('abort', () => settleAll(waiters), { once: true });
    }
    this.#signalWaiters = signalWaiters;
    this.#timer = setTimeout(timedOut, timeoutMs, this);
    turnWaiters.add(this);
    signalWaiters.add(this);
  }

  settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#turnWaiters.delete(this);
    this.#signalWaiters.delete(this);
    this.#resolve();
  }
}
