/** What a follower needs from its client, and what the client may call on it. */
import type { RetryPolicy } from '../core/backoff.js';
import type { Persistence } from '../storage/persistence.js';
import type { LoadedTurn } from '../storage/store.js';
import type { Clock } from '../ports/clock.js';
import type { NetworkMonitor } from '../ports/network.js';
import type { Page } from '../ports/page.js';
import type { Tabs } from '../ports/tabs.js';
import type { Timers } from '../ports/timers.js';
import type { Diagnostic, DrillKind, LimitOptions, StallOptions, Turn } from '../types.js';

/** Everything a follower needs from its client. */
export interface FollowerDeps {
  baseUrl: string;
  /** Names the Web Lock and BroadcastChannel the tabs share a turn's stream through. */
  namespace: string;
  fetch: typeof fetch;
  /** Fresh headers for every request. */
  headers: () => Promise<Record<string, string>>;
  retry: RetryPolicy;
  /** The app's options as given: the follower applies their defaults. */
  stall: StallOptions;
  limits: LimitOptions;
  /** One list or cancel request's time limit, ms (the first-event window: how long the server may take to answer at all). */
  requestTimeoutMs: number;
  /** Aborts when the client is disposed (its reason is the `disposed` error). */
  signal: AbortSignal;
  /** `now()` for every duration and schedule, `wallNow()` for what is stored or shown. */
  clock: Clock;
  timers: Timers;
  /** Uniform in [0, 1): jitter. */
  random: () => number;
  /** Mints ids (operation ids, lease owners). */
  newId: () => string;
  tabs: Tabs;
  page: Page;
  network: NetworkMonitor;
  emit: (diagnostic: Diagnostic) => void;
  persistence: Persistence;
  /** Schedules a batched notification (an animation frame or a microtask). */
  schedule: (callback: () => void) => void;
  /** Called (batched) after the snapshot changed. */
  onChange: () => void;
}

/** Where a turn came from, known before its events say it. */
export interface TurnOrigin {
  conversationId?: string | undefined;
  messageId?: string | undefined;
  operationId?: string | undefined;
  /** Epoch ms the server created the turn (its list says so): stored as the row's `createdAt`, lists sort by it. */
  createdAt?: number | undefined;
}

/** A followed turn: the `Turn` handle the app holds, plus what the client calls on it. */
export interface TurnFollower extends Turn {
  /** True once ended or failed. */
  readonly done: boolean;
  readonly lastSeq: number;
  /** Epoch ms the turn was created: the server's (adopted from its list), stored, or when first followed here. */
  readonly createdAt: number;
  /**
   * A handle of the app's own (`client.turn(id)`, a hook): the turn is followed while any
   * handle is open, and stops when the last one closes. The first claim replaces the
   * client's own interest (a restored or adopted turn runs until the app says otherwise).
   */
  claim(): Turn;
  /** Records what is known before the events (acceptance); writes the row at once. */
  setOrigin(origin: TurnOrigin): void;
  /** Restores what storage holds (before any network). */
  restore(loaded: LoadedTurn): void;
  /**
   * Starts (or resumes) following, unless the app closed every handle. `replayFirst` asks
   * the log before streaming (adopted turns); the promise then resolves once that replay
   * is over (or the turn settled), else at once.
   */
  start(replayFirst?: boolean): Promise<void>;
  /** A turn that failed for a reason that may pass is followed again, through replay, with a fresh retry budget. */
  revive(): Promise<void>;
  /** An ended, verified turn the server says differs (a receipt's 409): its copy is thrown away and replayed from 0, once. */
  rebuild(): void;
  /**
   * Replays the log next to whatever the main loop does (`recover()`): both paths merge
   * by seq. Resolves once that replay is over, or once the main loop's replay that took
   * over from a failed one is.
   */
  replayAlongside(): Promise<void>;
  /**
   * `client.drill`: answers how to set the fault off when it fits the turn's state, else
   * `undefined` (the client says the drill before running it, so a timeline reads in order).
   */
  drill(drill: DrillKind): (() => void) | undefined;
  /** The browser went online or offline: online retries at once. */
  onNetwork(online: boolean): void;
  /** The page came back from a freeze (`resume`): an open stream may have gone deaf. */
  onResume(): void;
  /** Ends every connection and timer for good (the client refuses any later use). */
  dispose(): void;
}
