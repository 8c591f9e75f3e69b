/**
 * One network stream per turn across the tabs of an origin (docs/faults.md row 25). The tab
 * holding the turn's Web Lock leads: it streams and relays every event it applies
 * (whatever brought it: stream or replay) on a BroadcastChannel; the others watch and
 * apply what it relays like their own stream. The browser hands the lock on when the
 * leader closes. Without Web Locks or BroadcastChannel there is no sharing: every tab
 * streams alone (`solo`).
 *
 * Messages on the channel: `0` = "I follow this turn", `1` = "so do I" (the answer),
 * `[lastSeq, data[]]` = a relayed batch and the cursor it led to.
 */
import type { Tabs } from '../ports/tabs.js';
import { lead } from './leadership.js';

/** This tab in a turn's group: `watching` (applies what the leader relays) until it gets the lock, then `leading`; `left` for good. */
export type SharePhase = 'watching' | 'leading' | 'left';
export type ShareEvent = 'lock' | 'batch' | 'leave';

/**
 * The group's table (rendered into docs/architecture.md): a watcher applies relayed batches
 * and leads once the lock comes; a leader ignores a late batch of the previous leader (its own
 * stream is the one to trust now); a tab that left hears nothing. Whether any other tab
 * watches (so relaying is worth a structured clone) is a region of its own.
 */
export const SHARE_TABLE: { readonly [P in SharePhase]: { readonly [E in ShareEvent]?: SharePhase } } = {
  watching: { lock: 'leading', batch: 'watching', leave: 'left' },
  leading: { leave: 'left' },
  left: {},
};

/** What the follower hears from the other tabs. */
export interface TurnShareHandlers {
  /** This tab leads: it got the lock (`shared`), or the lock manager refused and it streams alone. */
  onLead(shared: boolean): void;
  /** A batch the leader relayed (raw event data, in order) and the leader's cursor after it. */
  onBatch(lastSeq: number, batch: readonly string[]): void;
  /** A post that is not a batch (same-origin, but still input). */
  onBadBatch(): void;
}

/** This tab's membership of a turn's group. */
export interface TurnShare {
  /**
   * Relays an applied event (its raw data, or the event itself when it came by replay;
   * `undefined`: a heartbeat, which keeps the watchers' watchdogs quiet) once this task
   * ends, batched with the others of the task.
   */
  relay(data?: string | object): void;
  /** Leaves the group: lets the lock go (or withdraws the queued request). */
  leave(): void;
}

/**
 * Joins the tabs following `name`; `undefined` where tabs cannot share (no Web Locks or no
 * BroadcastChannel; happy-dom and some embedded browsers expose `navigator.locks` as null).
 * Until `onLead`, the tab watches.
 */
export function joinTurnShare(tabs: Tabs, name: string, handlers: TurnShareHandlers, lastSeq: () => number): TurnShare | undefined {
  const locks = tabs.locks();
  const channel = locks ? tabs.channel(name) : undefined;
  if (!locks || !channel) return undefined;
  const withdraw = new AbortController();
  let phase: SharePhase = 'watching';
  /** Moves by `event` when the table allows it here; answers whether it did. */
  const move = (event: ShareEvent): boolean => {
    const next = SHARE_TABLE[phase][event];
    if (next) phase = next;
    return next !== undefined;
  };
  /** Another tab follows this turn: only then is relaying (a structured clone per batch) worth it. */
  let watched = false;
  let outgoing: string[] | undefined;
  /**
   * A post the channel refuses (closed under us, a value it cannot clone: `DataCloneError`)
   * costs that one message, never the follower: a watcher that misses a batch notices the
   * gap or the silence and replays on its own (found by the simulator, test/sim/).
   */
  const post = (message: unknown): void => {
    try {
      channel.postMessage(message);
    } catch {
      // Dropped, as above.
    }
  };

  channel.addEventListener('message', ({ data }) => {
    if (typeof data === 'number') {
      watched = true;
      if (!data) post(1);
    } else if (move('batch')) {
      const [lastSeq, batch] = Array.isArray(data) ? (data as unknown[]) : [];
      if (typeof lastSeq !== 'number' || !Array.isArray(batch) || !batch.every((item) => typeof item === 'string')) return handlers.onBadBatch();
      handlers.onBatch(lastSeq, batch as string[]);
    }
  });
  post(0);
  // The leader keeps the lock until it leaves; the browser hands it on when its tab closes.
  void lead(name, { signal: withdraw.signal, locks }, (signal, how) => {
    if (!move('lock')) return Promise.resolve();
    handlers.onLead(how === 'lock');
    return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  });

  return {
    relay(data) {
      if (!watched || phase !== 'leading') return;
      if (!outgoing) {
        outgoing = [];
        queueMicrotask(() => {
          if (phase !== 'left') post([lastSeq(), outgoing]);
          outgoing = undefined;
        });
      }
      if (data !== undefined) outgoing.push(typeof data === 'string' ? data : JSON.stringify(data));
    },
    leave() {
      if (!move('leave')) return;
      // Withdraws a request still waiting, or steps down.
      withdraw.abort();
      channel.close();
    },
  };
}
