import type { NewTurnEvent, TurnLog } from '../log/turn-log.js';

/** Most events in one append call. */
const MAX_BATCH_EVENTS = 256;
/** Events queued before `push` waits for the log: an agent faster than its log is slowed, not buffered without end. */
const MAX_QUEUED_EVENTS = 1024;

/**
 * A turn's appends, coalesced: events the agent yields within one tick, or while the
 * previous append is still on its way, go to the log in one call (`appendMany` where the
 * log has it: one script run on Redis for the lot). An event pushed while the log is idle
 * goes out on the next turn of the event loop, so nothing waits on a timer.
 */
export class AppendQueue {
  readonly #log: TurnLog;
  readonly #turnId: string;
  #queued: NewTurnEvent[] = [];
  #flushing: Promise<void> | undefined;
  #failure: { error: unknown } | undefined;

  constructor(log: TurnLog, turnId: string) {
    this.#log = log;
    this.#turnId = turnId;
  }

  /** Queues `event`; waits only when the queue is full. Throws the failure of an earlier append. */
  async push(event: NewTurnEvent): Promise<void> {
    if (this.#failure) throw this.#failure.error;
    this.#queued.push(event);
    this.#flushing ??= this.#drain();
    if (this.#queued.length >= MAX_QUEUED_EVENTS) await this.flush();
  }

  /** Resolves once everything queued is logged; throws the first failure. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#failure) throw this.#failure.error;
  }

  async #drain(): Promise<void> {
    // One turn of the event loop: events yielded back to back join this call.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#queued.length > 0 && !this.#failure) {
        const batch = this.#queued.splice(0, MAX_BATCH_EVENTS);
        if (this.#log.appendMany) await this.#log.appendMany(this.#turnId, batch);
        else for (const event of batch) await this.#log.append(this.#turnId, event);
      }
    } catch (error) {
      this.#failure = { error };
      this.#queued = [];
    } finally {
      this.#flushing = undefined;
    }
  }
}
