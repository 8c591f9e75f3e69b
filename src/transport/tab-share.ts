/**
 * One network consumer per turn across the tabs of an origin (FAULTS row 25). The tab
 * holding the turn's Web Lock streams and relays every message it accepted on a
 * BroadcastChannel; the other tabs apply the relayed messages through their own apply
 * path and wait in the lock queue. The browser hands the lock to the next tab when the
 * holder closes or crashes; that tab resumes from its own cursor.
 */
import { ProtocolError } from '../errors.js';
import { createLockLeadership, type Leadership, type OutboxLocks } from '../outbox/leadership.js';

/** One SSE message as the leader received it: its event name and raw data. */
export type RelayedMessage = readonly [type: string, data: string];

/** What the leader posts after applying a batch: the messages, and its cursor after them. */
export interface RelayBatch {
  turnId: string;
  /**
   * The leader's last applied seq: a tab that joined after earlier batches went out
   * (or missed one) learns it is behind even from a heartbeat, and replays.
   */
  lastSeq: number;
  messages: readonly RelayedMessage[];
}

/**
 * Presence on the channel. Relaying costs the leader a structured clone of every event,
 * so it relays only turns some other tab watches: a watcher says `watch` when it starts
 * waiting, and again when a new leader says `hello`.
 */
interface ControlMessage {
  turnId: string;
  control: 'watch' | 'hello';
}

/** Leadership and relay of turn streams between the tabs of one namespace. */
export interface TabShare {
  /** Who streams `turnId`: the holder of `lifeline-turn:<namespace>:<turnId>`. */
  leadership(turnId: string): Leadership;
  /** Sends a batch of accepted stream messages (heartbeats included) to the other tabs. */
  publish(batch: RelayBatch): void;
  /** True once another tab said it watches `turnId`: only then is relaying worth its cost. */
  isWatched(turnId: string): boolean;
  /** A watcher tells the tabs it waits on `turnId`'s relay. */
  watch(turnId: string): void;
  /** A new leader asks the watchers of `turnId` to say so again. */
  hello(turnId: string): void;
  /** Receives the batches other tabs publish for `turnId`; returns unsubscribe. */
  listen(turnId: string, listener: (batch: RelayBatch) => void): () => void;
  close(): void;
}

interface RelayChannel {
  postMessage(message: unknown): void;
  close(): void;
  onmessage: ((event: { data: unknown }) => void) | null;
}

/** Where the lock manager refuses outright, every tab streams alone, as without sharing. */
const streamAlone: Leadership = {
  async hold(work, cancel) {
    if (!cancel.aborted) await work(new AbortController().signal);
  },
};

function isControl(data: unknown): data is ControlMessage {
  if (typeof data !== 'object' || data === null) return false;
  const { turnId, control } = data as { turnId?: unknown; control?: unknown };
  return typeof turnId === 'string' && (control === 'watch' || control === 'hello');
}

function isBatch(data: unknown): data is RelayBatch {
  if (typeof data !== 'object' || data === null) return false;
  const { turnId, lastSeq, messages } = data as { turnId?: unknown; lastSeq?: unknown; messages?: unknown };
  return (
    typeof turnId === 'string' &&
    Number.isSafeInteger(lastSeq) &&
    Array.isArray(messages) &&
    messages.every((item: unknown) => Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && typeof item[1] === 'string')
  );
}

/**
 * Creates the share for `namespace`, or `undefined` where Web Locks or BroadcastChannel
 * are missing (Node, old browsers): every tab then streams its turns itself.
 * `onInvalid` hears messages on the channel that are not relay batches.
 */
export function createTabShare(namespace: string, onInvalid: (error: ProtocolError) => void): TabShare | undefined {
  // happy-dom and some embedded browsers expose `navigator.locks` as null.
  const scope = globalThis as { navigator?: { locks?: OutboxLocks | null }; BroadcastChannel?: new (name: string) => RelayChannel };
  const locks = scope.navigator?.locks;
  const Channel = scope.BroadcastChannel;
  if (typeof locks?.request !== 'function' || typeof Channel !== 'function') return undefined;
  const channel = new Channel(`lifeline-turns:${namespace}`);
  const listeners = new Map<string, Set<(batch: RelayBatch) => void>>();
  const watched = new Set<string>();
  const say = (turnId: string, control: ControlMessage['control']) => channel.postMessage({ turnId, control } satisfies ControlMessage);
  channel.onmessage = ({ data }) => {
    if (isControl(data)) {
      if (data.control === 'watch') watched.add(data.turnId);
      // Only tabs following the turn listen; the leader itself never hears its own hello.
      else if (listeners.has(data.turnId)) say(data.turnId, 'watch');
      return;
    }
    if (!isBatch(data)) {
      onInvalid(new ProtocolError('invalid_response', 'A message on the turn relay channel is not a relay batch.'));
      return;
    }
    for (const listener of listeners.get(data.turnId) ?? []) listener(data);
  };
  return {
    leadership: (turnId) => createLockLeadership(locks, `lifeline-turn:${namespace}:${turnId}`, streamAlone),
    publish(batch) {
      channel.postMessage(batch);
    },
    isWatched: (turnId) => watched.has(turnId),
    watch: (turnId) => say(turnId, 'watch'),
    hello: (turnId) => say(turnId, 'hello'),
    listen(turnId, listener) {
      let set = listeners.get(turnId);
      if (set === undefined) listeners.set(turnId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(turnId);
      };
    },
    close() {
      listeners.clear();
      watched.clear();
      channel.onmessage = null;
      channel.close();
    },
  };
}
