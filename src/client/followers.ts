/**
 * The client's followed turns: one follower per turn id in `followers`, each created by
 * `follow(turnId, deps)`, and `client.turns`, the list of their snapshots (notified at most
 * once per frame). Turns come from the app (`client.turn`), from storage (at start, or a
 * conversation's stored turns) and from the server's list (`recover`).
 */
import { createBatcher, createEmitter } from '../core/subscribable.js';
import type { TurnObject } from '../protocol/schemas.js';
import type { LoadedTurn } from '../storage/store.js';
import { follow } from '../follow/follower.js';
import type { FollowerDeps, TurnFollower } from '../follow/types.js';
import type { ExternalStore, Turn, TurnSnapshot } from '../types.js';
import { createBooter } from './boot.js';

export interface FollowerRegistry {
  /** Every followed turn, by id. */
  readonly followers: ReadonlyMap<string, TurnFollower>;
  /** `client.turns`: every follower's snapshot, oldest first. */
  readonly turns: ExternalStore<readonly TurnSnapshot[]>;
  /**
   * `client.turn(id)`: a new handle on the turn's one follower (created and started from
   * what storage holds when not held yet); the turn stops when its last handle closes.
   */
  turn(turnId: string): Turn;
  /** Creates followers for the unfinished turns storage held at start (not yet started); answers those created. */
  restore(loaded: readonly LoadedTurn[]): LoadedTurn[];
  /**
   * Shows a conversation's stored turns without the network: ended turns are not restored
   * at start, yet the conversation lists them (and their messages) after a reload.
   */
  hydrate(conversationId: string): Promise<void>;
  /** One turn the server listed: adopted when not held, revived when it failed, else replayed alongside. */
  adopt(turn: TurnObject): Promise<void>;
  /** Disposes and forgets every follower (logout). */
  clear(): void;
  /** Disposes every follower and stops notifying (the client is disposed). */
  dispose(): void;
}

interface TurnList {
  readonly store: ExternalStore<readonly TurnSnapshot[]>;
  /** A follower was added or removed, or its snapshot changed. */
  changed(): void;
  /** Drops a pending notification; none follows. */
  cancel(): void;
  /** The next read rebuilds the list now, before the batched notification. */
  refresh(): void;
}

/**
 * `client.turns` over `followers`: the list is rebuilt lazily and notified at most once per
 * `schedule` tick, because a burst of deltas changes a snapshot many times per frame.
 */
function createTurnList(followers: ReadonlyMap<string, TurnFollower>, schedule: FollowerDeps['schedule']): TurnList {
  const listeners = createEmitter<void>();
  let list: readonly TurnSnapshot[] | undefined;
  const batcher = createBatcher(() => {
    list = undefined;
    listeners.emit();
  }, schedule);
  return {
    store: {
      getSnapshot: () =>
        (list ??= Object.freeze(
          [...followers.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((follower) => follower.getSnapshot()),
        )),
      subscribe: listeners.subscribe,
    },
    changed: () => batcher.request(),
    cancel: () => batcher.cancel(),
    refresh: () => (list = undefined),
  };
}

/**
 * `ready` resolves once stored turns are loaded (`client.ready`); `signal` aborts when the
 * client is disposed.
 */
export function createFollowerRegistry(deps: Omit<FollowerDeps, 'onChange'>, ready: () => Promise<void>, signal: AbortSignal): FollowerRegistry {
  const { persistence } = deps;
  const followers = new Map<string, TurnFollower>();
  const list = createTurnList(followers, deps.schedule);
  const followerDeps: FollowerDeps = { ...deps, onChange: () => list.changed() };

  const create = (turnId: string): TurnFollower => {
    const follower = follow(turnId, followerDeps);
    followers.set(turnId, follower);
    list.changed();
    return follower;
  };

  const { boot, booting, restoreInto } = createBooter({ ready, signal, persistence, current: (follower) => followers.get(follower.id) === follower });

  return {
    followers,
    turns: list.store,
    turn(turnId) {
      let follower = followers.get(turnId);
      if (!follower) void boot((follower = create(turnId)));
      return follower.claim();
    },
    restore(loaded) {
      const restored = loaded.filter(({ record }) => !followers.has(record.id));
      for (const turn of restored) restoreInto(create(turn.record.id), turn);
      return restored;
    },
    async hydrate(conversationId) {
      await ready();
      const loading: Promise<void>[] = [];
      for (const record of signal.aborted ? [] : await persistence.loadConversation(conversationId)) {
        if (signal.aborted) continue;
        if (followers.has(record.id)) {
          // Held already, e.g. followed from an accepted outbox entry at start: maybe still reading storage.
          const held = booting.get(record.id);
          if (held) loading.push(held);
          continue;
        }
        const follower = create(record.id);
        // Folded: the row is the whole turn, nothing more to read.
        if (record.text !== undefined) restoreInto(follower, { record, events: [] });
        loading.push(boot(follower));
      }
      // `conversation.ready` promises these turns in the snapshot: an unfolded one (ended just
      // before a reload, or followed before this ran) has its events read by `boot`, and the
      // list is rebuilt now, not at the next batched notification.
      await Promise.all(loading);
      if (loading.length > 0) list.refresh();
    },
    async adopt(turn) {
      // The list carries the message that started the turn (1.1): a new device shows it too.
      if (turn.content !== undefined && !persistence.message(turn.id)) persistence.setMessage(turn.id, { content: turn.content });
      const held = followers.get(turn.id);
      if (held?.done) return held.revive();
      if (held) return held.replayAlongside();
      const follower = create(turn.id);
      // The server's creation time, not the adoption's: turns adopted together must not sort by id.
      const createdAt = Date.parse(turn.createdAt);
      follower.setOrigin({ conversationId: turn.conversationId, messageId: turn.messageId, createdAt: Number.isFinite(createdAt) ? createdAt : undefined });
      await boot(follower, true);
    },
    clear() {
      for (const follower of followers.values()) {
        follower.dispose();
        // Nothing of a disposed follower stays reachable (its row description included).
        persistence.untrack(follower.id);
      }
      followers.clear();
      list.changed();
    },
    dispose() {
      for (const follower of followers.values()) follower.dispose();
      list.cancel();
    },
  };
}
