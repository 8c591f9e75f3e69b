/**
 * A follower's boot, from its creation by the registry to its start, as a table (rendered
 * into docs/architecture.md). A follower is `created` (by `client.turn`, a stored turn at
 * start, a conversation's stored turns, or the server's list); `restored` once it holds
 * what storage had (given at start, or read by its boot: `reading`, after `client.ready`,
 * only while it holds nothing yet); `started` once the registry started it. A boot whose
 * follower was cleared or the client disposed meanwhile is `dropped`: nothing starts.
 *
 * Storage is given to a follower only before it starts (`TurnFollower.restore` refuses
 * later): a reopened turn's stored copy read late would leave its machine unaware of what
 * it holds.
 */
import type { LoadedTurn } from '../storage/store.js';
import type { FollowerDeps, TurnFollower } from '../follow/types.js';

export type BootPhase = 'created' | 'reading' | 'restored' | 'started' | 'dropped';
export type BootEvent = 'restore' | 'boot' | 'read' | 'drop' | 'start';

export const BOOT_TABLE: { readonly [P in BootPhase]: { readonly [E in BootEvent]?: BootPhase } } = {
  created: { restore: 'restored', boot: 'reading' },
  // A folded turn given by a conversation's rows is booted still: its boot reads nothing.
  restored: { boot: 'reading', start: 'started' },
  reading: { read: 'restored', drop: 'dropped' },
  started: {},
  dropped: {},
};

/** What booting a follower needs from the registry. */
export interface BootContext {
  ready: () => Promise<void>;
  signal: AbortSignal;
  persistence: FollowerDeps['persistence'];
  /** The follower is still the registry's one for its id (not cleared meanwhile). */
  current(follower: TurnFollower): boolean;
}

/**
 * Boots followers once stored turns are loaded, and keeps their storage reads by turn id:
 * `hydrate` waits for those of its conversation, whoever started them.
 */
export function createBooter({ ready, signal, persistence, current }: BootContext) {
  const phases = new WeakMap<TurnFollower, BootPhase>();
  const booting = new Map<string, Promise<void>>();
  /** Moves `follower` by `event` when the table allows it there; answers whether it did. */
  const move = (follower: TurnFollower, event: BootEvent): boolean => {
    const next = BOOT_TABLE[phases.get(follower) ?? 'created'][event];
    if (next) phases.set(follower, next);
    return next !== undefined;
  };
  /** Gives `follower` what storage held (before any network). */
  const restoreInto = (follower: TurnFollower, loaded: LoadedTurn): void => {
    if (move(follower, 'restore')) follower.restore(loaded);
  };
  /** `replayFirst` as {@link TurnFollower.start}, whose promise this answers. */
  const boot = (follower: TurnFollower, replayFirst?: boolean): Promise<void> => {
    if (!move(follower, 'boot')) return Promise.resolve();
    const read = (async () => {
      await ready();
      if (signal.aborted || !current(follower)) return void move(follower, 'drop');
      // Storage is read only for a follower holding nothing yet (not restored, no events arrived meanwhile).
      const empty = (): boolean => follower.lastSeq === 0 && !follower.done;
      const stored = empty() ? await persistence.loadTurn(follower.id) : undefined;
      if (stored && empty()) follower.restore(stored);
      move(follower, 'read');
    })().finally(() => booting.get(follower.id) === read && booting.delete(follower.id));
    booting.set(follower.id, read);
    return read.then(() => (move(follower, 'start') ? follower.start(replayFirst) : undefined));
  };
  return { boot, restoreInto, booting: booting as ReadonlyMap<string, Promise<void>> };
}
