/**
 * The app's handles on one followed turn, counted like TanStack Query's observers: each
 * `client.turn(id)` (and each hook) gets a handle of its own, and the turn stops only when
 * the last open handle closes, so one view closing never stops another's turn.
 */
import type { TurnEvent } from '../protocol/schemas.js';
import type { EndedTurnSnapshot, Turn, TurnSnapshot } from '../types.js';

/** The follower as its handles see it. */
interface Shared {
  readonly id: string;
  readonly completed: Promise<EndedTurnSnapshot>;
  readonly done: boolean;
  getSnapshot(): TurnSnapshot;
  subscribe(listener: () => void): () => void;
  cancel(): Promise<void>;
}

export interface Consumers {
  /** The turn is wanted: no handle was ever claimed (the client's own interest), or one is open. */
  readonly wanted: boolean;
  /** A new open handle; reopens a turn every earlier handle had closed. */
  claim(): Turn;
  /** Closes every handle (the app closed "the turn"). */
  closeAll(): void;
  /** An iterator over events applied from now on, each seq once, until the turn ends or stops. */
  iterate(owner?: object): AsyncIterator<TurnEvent>;
  /** Hot path: hands an applied event to every running iterator. */
  deliver(event: TurnEvent): void;
  /** Ends every running iterator (the turn stopped). */
  endIterators(): void;
}

/** Feeds one `for await`; called without an event when it ends. */
type Queue = (event?: TurnEvent) => void;

export function createConsumers(shared: Shared, stop: () => void, reopen: () => void): Consumers {
  let open = 0;
  let claimed = false;
  const queues = new Map<Queue, object | undefined>();

  const consumers: Consumers = {
    get wanted() {
      return !claimed || open > 0;
    },
    claim() {
      const wasWanted = consumers.wanted;
      claimed = true;
      open++;
      if (!wasWanted) reopen();
      let closed = false;
      const handle: Turn = {
        id: shared.id,
        get completed() {
          return shared.completed;
        },
        getSnapshot: () => shared.getSnapshot(),
        subscribe: (listener) => shared.subscribe(listener),
        cancel: () => shared.cancel(),
        [Symbol.asyncIterator]: () => consumers.iterate(handle),
        close() {
          if (closed) return;
          closed = true;
          for (const [queue, owner] of queues) if (owner === handle) queue();
          if (--open === 0) stop();
        },
      };
      return handle;
    },
    closeAll() {
      claimed = true;
      open = 0;
      stop();
    },
    async *iterate(owner) {
      const items: (TurnEvent | undefined)[] = [];
      let notify: (value?: unknown) => void = () => {};
      const queue: Queue = (event) => notify(items.push(event));
      if (shared.done || !consumers.wanted) return;
      queues.set(queue, owner);
      try {
        for (let lastSeq = 0; ; ) {
          if (!items.length) await new Promise((resolve) => (notify = resolve));
          const event = items.shift();
          if (!event) return;
          // A rebuild replays from seq 0: what was yielded is not yielded again.
          if (event.seq <= lastSeq) continue;
          lastSeq = event.seq;
          yield event;
        }
      } finally {
        queues.delete(queue);
      }
    },
    deliver(event) {
      // Most turns have no iterator: no Map iterator per event then.
      if (queues.size) for (const queue of queues.keys()) queue(event);
    },
    endIterators() {
      for (const queue of queues.keys()) queue();
    },
  };
  return consumers;
}
