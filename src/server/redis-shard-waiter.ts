import type { Cluster } from 'ioredis';
import type { TurnKeys } from './redis-keys.js';

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
 * `SSUBSCRIBE` is acknowledged AND the turn's lastSeq was read after that: from then on
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
  /** The log's command client: duplicated once for the subscribers, and used to read lastSeq. */
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
  turnKey: string;
  /** Highest seq known to be logged. */
  seq: number;
  /** Subscribed and read since the last sign of a lost connection. */
  confirmed: boolean;
  confirming: boolean;
  waiters: Set<Waiter>;
  idleSince: number;
}

export function createShardWaiter(options: ShardWaiterOptions): ShardWaiter {
  const { client, lingerMs, onError } = options;
  const channels = new Map<string, Channel>();
  let subscriber: Cluster | undefined;
  let sweeper: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  /** Counts signs of lost subscriber connections; a confirmation that straddles one does not count. */
  let epoch = 0;
  /** ioredis's keyPrefix applies to the script's KEYS, so also to the channel the script publishes on. */
  const prefix = client.options.keyPrefix ?? '';

  function wake(channel: Channel, seq: number): void {
    channel.seq = Math.max(channel.seq, seq);
    for (const waiter of [...channel.waiters]) if (waiter.after < channel.seq) waiter.settle(true);
  }

  /** After a possibly lost message: forget what was confirmed; re-confirm what is waited on. */
  function resync(): void {
    epoch++;
    for (const [name, channel] of channels) {
      channel.confirmed = false;
      if (channel.waiters.size > 0) void confirm(name, channel);
    }
  }

  function connect(): Cluster {
    if (subscriber) return subscriber;
    const sub = client.duplicate(undefined, { shardedSubscribers: true, keyPrefix: '' });
    sub.on('error', onError);
    sub.on('smessage', (name: string, message: string) => {
      const channel = channels.get(name);
      if (channel) wake(channel, Number(message));
    });
    for (const event of ['-node', 'subscribersReady', '-subscriber', '+subscriber']) sub.on(event, resync);
    sweeper = setInterval(sweep, lingerMs);
    (sweeper as { unref?: () => void }).unref?.();
    return (subscriber = sub);
  }

  async function confirm(name: string, channel: Channel): Promise<void> {
    if (channel.confirming) return;
    channel.confirming = true;
    const started = epoch;
    try {
      await connect().ssubscribe(name);
      const lastSeq = await client.hget(channel.turnKey, 'lastSeq');
      channel.confirmed = started === epoch;
      wake(channel, Number(lastSeq ?? 0));
      // A turn that is gone wakes its waiters too: they find out by reading it.
      if (lastSeq === null) for (const waiter of [...channel.waiters]) waiter.settle(true);
    } catch (error) {
      if (closed) return;
      onError(error);
      for (const waiter of [...channel.waiters]) waiter.settle(false);
    } finally {
      channel.confirming = false;
    }
    if (!closed && !channel.confirmed && channel.waiters.size > 0 && channels.get(name) === channel) void confirm(name, channel);
  }

  function sweep(): void {
    const idle: string[] = [];
    for (const [name, channel] of channels) {
      if (channel.waiters.size === 0 && !channel.confirming && Date.now() - channel.idleSince >= lingerMs) {
        channels.delete(name);
        idle.push(name);
      }
    }
    for (const name of idle) subscriber?.sunsubscribe(name).catch(onError);
  }

  return {
    wait(keys, after, signal, timeoutMs) {
      if (closed || signal.aborted) return Promise.resolve(false);
      const name = `${prefix}${keys.wake}`;
      let channel = channels.get(name);
      if (!channel) {
        channel = { turnKey: keys.turn, seq: 0, confirmed: false, confirming: false, waiters: new Set(), idleSince: Date.now() };
        channels.set(name, channel);
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
        if (!target.confirmed) void confirm(name, target);
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      if (sweeper !== undefined) clearInterval(sweeper);
      for (const channel of channels.values()) for (const waiter of [...channel.waiters]) waiter.settle(false);
      channels.clear();
      subscriber?.disconnect();
    },
  };
}
