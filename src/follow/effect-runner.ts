/**
 * The follower's timers and requests, each owned by name. Arming a timer replaces its
 * previous deadline; beginning a request aborts the one before it in the same slot; a
 * result is acted on only while its request is still the slot's current one. So no
 * timer or request outlives the state that asked for it.
 */
import type { RequestSlot, TimerName } from '../core/follow-types.js';
import type { Clock } from '../ports/clock.js';
import type { TimerHandle, Timers } from '../ports/timers.js';

export interface EffectRunner {
  /** Sets `name` to fire `onFire` in `ms`, replacing any earlier deadline of that name. */
  arm(name: TimerName, ms: number, onFire: () => void): void;
  clear(name: TimerName): void;
  /** When `name` was last armed (monotonic ms). */
  armedAt(name: TimerName): number;
  /** A fresh request in `slot` (the previous one is aborted). */
  begin(slot: RequestSlot): AbortController;
  abort(slot: RequestSlot): void;
  /** The signal of `slot`'s current request, if one is out. */
  signal(slot: RequestSlot): AbortSignal | undefined;
  /** `controller` is still the current request of `slot` and was not aborted. */
  current(slot: RequestSlot, controller: AbortController): boolean;
  /** Every timer cleared, every request aborted. */
  clearAll(): void;
}

export function createEffectRunner(clock: Clock, platform: Timers): EffectRunner {
  const timers = new Map<TimerName, { handle: TimerHandle; at: number }>();
  const requests = new Map<RequestSlot, AbortController>();
  const runner: EffectRunner = {
    arm(name, ms, onFire) {
      runner.clear(name);
      const handle = platform.set(() => {
        timers.delete(name);
        onFire();
      }, ms);
      timers.set(name, { handle, at: clock.now() });
    },
    clear(name) {
      platform.clear(timers.get(name)?.handle);
      timers.delete(name);
    },
    armedAt: (name) => timers.get(name)?.at ?? clock.now(),
    begin(slot) {
      runner.abort(slot);
      const controller = new AbortController();
      requests.set(slot, controller);
      return controller;
    },
    abort(slot) {
      requests.get(slot)?.abort();
      requests.delete(slot);
    },
    signal: (slot) => requests.get(slot)?.signal,
    current: (slot, controller) => requests.get(slot) === controller && !controller.signal.aborted,
    clearAll() {
      for (const name of [...timers.keys()]) runner.clear(name);
      for (const slot of [...requests.keys()]) runner.abort(slot);
    },
  };
  return runner;
}
