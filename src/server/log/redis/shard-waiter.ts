import type { Cluster } from 'ioredis';
import { execAll, headOf } from './codec.js';
import type { TurnKeys } from './keys.js';

/**
 * Wakes live followers on Redis Cluster. The standalone waiter's single `XREAD BLOCK`
 * over every followed stream cannot work there (one command may only touch keys of one
 * slot, and each turn has its own), so every append also publishes its seq on the
 * turn's sharded pub/sub channel (`SPUBLISH` from the append script, same slot as the
 * turn). This waiter subscribes with `SSUBSCRIBE` through a dedicated ioredis Cluster
 * with `shardedSubscribers`: one subscriber connection per master, however many turns
 * are followed. A message only travels within its shard, so the cost of a wake-up does
 * not grow with the cluster the way classic `PUBLISH` (broadcast to every node) would.
 *
 * Pub/sub drops what nobody is subscribed to, so a channel only counts as watched once
 * `SSUBSCRIBE` is acknowledged AND the turn's newest seq was read after that: from then on
 * every append is heard. Any sign that a subscriber connection was lost (a node gone, the
 * subscribers reset after a failover) makes every channel unconfirmed again, and the
 * channels someone waits on are re-subscribed and re-read at once; a wake-up lost in
 * between is found by that read. A channel stays subscribed for `lingerMs` after its last
 * waiter leaves, so a follower looping event after event does not resubscribe each time.
 */
export interface ShardWaiter {
  /**
   * Resolves `true` once the turn has an event with seq > `after` (immediately when it is
   * known to), `false` on timeout, abort, close or a failed subscribe. Never rejects.
   */
  wait(keys: TurnKeys, after: number, signal: AbortSignal, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface ShardWaiterOptions {
  /** The log's command client: duplicated once for the subscribers, and used to read the newest seq. */
  client: Cluster;
  /** How long a channel nobody waits on stays subscribed, ms. */
  lingerMs: number;
  onError: (error: unknown) => void;
}

interface Waiter {
  after: number;
  settle(woken: boolean): void;
}

interface Channel {
  keys: TurnKeys;
  /** Highest seq known to be logged. */
  seq: number;
  /** Subscribed and read since the last sign of a lost connection. */
  confirmed: boolean;
  confirming: boolean;
  waiters: Set<Waiter>;
  idleSince: number;
}

export function createShardWaiter(options: ShardWaiterOptions): ShardWaiter {
  return new ShardSubscriptions(options);
}

class ShardSubscriptions implements ShardWaiter {
  readonly #client: Cluster;
  readonly #lingerMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #channels = new Map<string, Channel>();
  /** ioredis's keyPrefix applies to the script's KEYS, so also to the channel the script publishes on. */
  readonly #prefix: string;
  #subscriber: Cluster | undefined;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  /** Counts signs of lost subscriber connections; a confirmation that straddles one does not count. */
  #epoch = 0;

  constructor(options: ShardWaiterOptions) {
    this.#client = options.client;
    this.#lingerMs = options.lingerMs;
    this.#onError = options.onError;
    this.#prefix = options.client.options.keyPrefix ?? '';
  }

  wait(keys: TurnKeys, after: number, signal: AbortSignal, timeoutMs: number): Promise<boolean> {
    if (this.#closed || signal.aborted) return Promise.resolve(false);
    const name = `${this.#prefix}${keys.wake}`;
    let channel = this.#channels.get(name);
    if (!channel) {
      channel = { keys, seq: 0, confirmed: false, confirming: false, waiters: new Set(), idleSince: Date.now() };
      this.#channels.set(name, channel);
    }
    if (channel.confirmed && channel.seq > after) return Promise.resolve(true);
    const target = channel;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        after,
        settle(woken) {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          if (target.waiters.delete(waiter) && target.waiters.size === 0) target.idleSince = Date.now();
          resolve(woken);
        },
      };
      const onAbort = (): void => waiter.settle(false);
      const timer = setTimeout(onAbort, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      target.waiters.add(waiter);
      if (!target.confirmed) void this.#confirm(name, target);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    for (const channel of this.#channels.values()) for (const waiter of [...channel.waiters]) waiter.settle(false);
    this.#channels.clear();
    this.#subscriber?.disconnect();
  }

  #wake(channel: Channel, seq: number): void {
    channel.seq = Math.max(channel.seq, seq);
    for (const waiter of [...channel.waiters]) if (waiter.after < channel.seq) waiter.settle(true);
  }

  /** After a possibly lost message: forget what was confirmed; re-confirm what is waited on. */
  #resync(): void {
    this.#epoch++;
    for (const [name, channel] of this.#channels) {
      channel.confirmed = false;
      if (channel.waiters.size > 0) void this.#confirm(name, channel);
    }
  }

  #connect(): Cluster {
    if (this.#subscriber) return this.#subscriber;
    const subscriber = this.#client.duplicate(undefined, { shardedSubscribers: true, keyPrefix: '' });
    subscriber.on('error', this.#onError);
    subscriber.on('smessage', (name: string, message: string) => {
      const channel = this.#channels.get(name);
      if (channel) this.#wake(channel, Number(message));
    });
    for (const event of ['-node', 'subscribersReady', '-subscriber', '+subscriber']) subscriber.on(event, () => this.#resync());
    this.#sweeper = setInterval(() => this.#sweep(), this.#lingerMs);
    (this.#sweeper as { unref?: () => void }).unref?.();
    return (this.#subscriber = subscriber);
  }

  async #confirm(name: string, channel: Channel): Promise<void> {
    if (channel.confirming) return;
    channel.confirming = true;
    const started = this.#epoch;
    try {
      await this.#connect().ssubscribe(name);
      const lastSeq = await this.#lastSeq(channel.keys);
      channel.confirmed = started === this.#epoch;
      this.#wake(channel, lastSeq ?? 0);
      // A turn that is gone wakes its waiters too: they find out by reading it.
      if (lastSeq === null) for (const waiter of [...channel.waiters]) waiter.settle(true);
    } catch (error) {
      if (this.#closed) return;
      this.#onError(error);
      for (const waiter of [...channel.waiters]) waiter.settle(false);
    } finally {
      channel.confirming = false;
    }
    const stillWanted = !this.#closed && channel.waiters.size > 0 && this.#channels.get(name) === channel;
    if (!channel.confirmed && stillWanted) void this.#confirm(name, channel);
  }

  /** The turn's newest seq (its record's, or its stream's once newer), null when the turn is gone. */
  async #lastSeq(keys: TurnKeys): Promise<number | null> {
    const [lastSeq, newest] = (await execAll(this.#client.pipeline().hget(keys.turn, 'lastSeq').xrevrange(keys.events, '+', '-', 'COUNT', 1))) as [
      string | null,
      [string, string[]][],
    ];
    return lastSeq === null ? null : Math.max(Number(lastSeq), headOf(newest)?.seq ?? 0);
  }

  #sweep(): void {
    const idle: string[] = [];
    for (const [name, channel] of this.#channels) {
      if (channel.waiters.size === 0 && !channel.confirming && Date.now() - channel.idleSince >= this.#lingerMs) {
        this.#channels.delete(name);
        idle.push(name);
      }
    }
    for (const name of idle) this.#subscriber?.sunsubscribe(name).catch(this.#onError);
  }
}
