/**
 * What a follower's callers wait on: `completed` (the ended snapshot; a new promise when
 * a `done` turn is followed again) and the running replay (`start(true)`, `recover()`).
 */
import type { EndedTurnSnapshot } from '../types.js';

export class Settlement {
  completed!: Promise<EndedTurnSnapshot>;
  #resolve!: (snapshot: EndedTurnSnapshot) => void;
  /** Resolved when the running replay is over or the turn settled. */
  #waiters: (() => void)[] = [];

  constructor() {
    this.unsettle();
  }

  /** Resolves `completed` (later calls until `unsettle` change nothing). */
  settle(snapshot: EndedTurnSnapshot): void {
    this.#resolve(snapshot);
  }

  unsettle(): void {
    this.completed = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Resolves once the running replay is over ({@link release}). */
  replayOver(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
