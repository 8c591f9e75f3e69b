/**
 * Simulated tabs of one browser: a Web Locks manager and BroadcastChannels shared by every
 * tab, on virtual time. A lock is granted as a task, held until its callback's promise
 * settles, handed to the next request in order; a request withdrawn by its signal rejects
 * with the signal's reason. A message is a structured clone delivered to every other open
 * channel of its name as a task. `kill(owner)` is a tab closing or crashing: its locks are
 * released and its channels stop hearing, without any of its code running.
 */
import type { Rng } from './rng.js';
import type { Scheduler } from './scheduler.js';

export interface TabFaults {
  /** The next this many posts on a turn's channel throw `DataCloneError` (a throw inside the client's own handling). */
  postThrowsNext: number;
}

interface Waiter {
  owner: string;
  grant: () => void;
  withdraw: (reason: unknown) => void;
}

export interface SimTabs {
  faults: TabFaults;
  /** A `navigator.locks` for tab `owner` (the part the client uses). */
  locksFor(owner: string): { request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown> };
  /** A `BroadcastChannel` class for tab `owner`. */
  channelFor(owner: string): typeof BroadcastChannel;
  kill(owner: string): void;
  /** The tab closed or crashed. */
  dead(owner: string): boolean;
  /** Who holds each lock (for the trace). */
  holders(): Record<string, string>;
}

export function createSimTabs(rng: Rng, scheduler: Scheduler): SimTabs {
  const faults: TabFaults = { postThrowsNext: 0 };
  const held = new Map<string, string>();
  const queues = new Map<string, Waiter[]>();
  const channels = new Map<string, Set<{ owner: string; deliver: (data: unknown) => void }>>();
  const dead = new Set<string>();

  const next = (name: string): void => {
    if (held.has(name)) return;
    const waiter = queues.get(name)?.shift();
    if (waiter) waiter.grant();
  };

  const locksFor: SimTabs['locksFor'] = (owner) => ({
    request(name, options, callback) {
      const { signal } = options;
      return new Promise((resolve, reject) => {
        if (dead.has(owner)) return;
        if (signal?.aborted) return reject(signal.reason);
        const queue = queues.get(name) ?? [];
        queues.set(name, queue);
        const onAbort = (): void => waiter.withdraw(signal!.reason);
        const waiter: Waiter = {
          owner,
          grant() {
            signal?.removeEventListener('abort', onAbort);
            held.set(name, owner);
            scheduler.task(() => {
              if (held.get(name) !== owner || dead.has(owner)) return;
              let result: Promise<void>;
              try {
                result = Promise.resolve(callback());
              } catch (error) {
                result = Promise.reject(error);
              }
              result.then(resolve, reject).finally(() => {
                if (held.get(name) === owner && !dead.has(owner)) {
                  held.delete(name);
                  next(name);
                }
              });
            }, 0, owner);
          },
          withdraw(reason) {
            const index = queue.indexOf(waiter);
            if (index < 0) return;
            queue.splice(index, 1);
            reject(reason);
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(waiter);
        next(name);
      });
    },
  });

  const channelFor = (owner: string): typeof BroadcastChannel => {
    class SimChannel extends EventTarget {
      readonly name: string;
      onmessage: ((event: MessageEvent) => void) | null = null;
      onmessageerror: ((event: MessageEvent) => void) | null = null;
      #closed = false;
      #member: { owner: string; deliver: (data: unknown) => void };
      constructor(name: string) {
        super();
        this.name = String(name);
        this.#member = {
          owner,
          deliver: (data) => {
            if (this.#closed || dead.has(owner)) return;
            const event = new MessageEvent('message', { data });
            this.onmessage?.(event);
            this.dispatchEvent(event);
          },
        };
        const set = channels.get(this.name) ?? new Set();
        channels.set(this.name, set);
        set.add(this.#member);
      }
      postMessage(message: unknown): void {
        if (this.#closed) throw new DOMException('sim: channel closed', 'InvalidStateError');
        // Only a turn's channel: a lost batch is recovered by the gap or stall replay. A lost outbox
        // notice is not recovered until the sender re-reads storage (reported, not simulated here).
        if (faults.postThrowsNext > 0 && this.name.startsWith('lifeline-turn:')) {
          faults.postThrowsNext--;
          throw new DOMException('sim: could not clone', 'DataCloneError');
        }
        const data = structuredClone(message);
        for (const member of channels.get(this.name) ?? []) {
          if (member !== this.#member) scheduler.task(() => member.deliver(structuredClone(data)), rng.int(0, 2), member.owner);
        }
      }
      close(): void {
        this.#closed = true;
        channels.get(this.name)?.delete(this.#member);
      }
    }
    return SimChannel as unknown as typeof BroadcastChannel;
  };

  return {
    faults,
    locksFor,
    channelFor,
    kill(owner) {
      dead.add(owner);
      for (const [name, holder] of [...held]) {
        if (holder === owner) {
          held.delete(name);
          next(name);
        }
      }
      for (const queue of queues.values()) {
        for (let i = queue.length; i--; ) if (queue[i]!.owner === owner) queue.splice(i, 1);
      }
      for (const set of channels.values()) for (const member of [...set]) if (member.owner === owner) set.delete(member);
    },
    dead: (owner) => dead.has(owner),
    holders: () => Object.fromEntries(held),
  };
}
