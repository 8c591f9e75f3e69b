/**
 * Follows one turn: the reconnect loop, the stall watchdogs, replay, integrity check,
 * and the external store the UI reads. One instance per turn id per client.
 *
 * Every event, whatever path brought it (stream, replay, a replay racing the stream,
 * storage), goes through {@link TurnFollower.ingest} and the pure reducer, so each seq is
 * applied exactly once and in order. Only one network operation of the main loop runs
 * at a time: a stream attempt, a replay page or a wait.
 */
import { createBackoff, type Backoff, type RetryPolicy } from './core/backoff.js';
import { sha256HexSync } from './core/sha256.js';
import { createBatcher, createEmitter, type Batcher } from './core/subscribable.js';
import {
  applyEvent,
  applyNext,
  classifyEvent,
  foldedTurnState,
  initialTurnState,
  skipEvent,
  turnText,
  type ReducerLimits,
  type TurnState,
} from './core/turn-reducer.js';
import {
  asLifelineError,
  CancelledError,
  errorFromJson,
  ProtocolError,
  TransportError,
  type LifelineError,
  type LifelineErrorCode,
} from './errors.js';
import type { DecodeResult } from './protocol/decode.js';
import { sha256Hex } from './protocol/integrity.js';
import type { TurnEvent } from './protocol/schemas.js';
import type { Persistence, TurnMeta } from './storage/persistence.js';
import type { LoadedTurn, TurnStatus } from './storage/store.js';
import { decodeStreamEvent } from './transport/event-decoder.js';
import { endpoint, type Failure } from './transport/http.js';
import type { NetworkMonitor } from './transport/network.js';
import { fetchReplayPage } from './transport/replay.js';
import { cancelTurn } from './transport/requests.js';
import { runSseAttempt, type SseOutcome, type StreamLimits } from './transport/sse-connection.js';
import type { RelayBatch, TabShare } from './transport/tab-share.js';
import type { ConnectionInfo, Diagnostic, RecoveryInfo, RecoveryPath, StallInfo, Turn, TurnSnapshot } from './types.js';

/** Everything a follower needs from its client. */
export interface FollowerDeps {
  baseUrl: string;
  fetch: typeof fetch;
  /** Fresh headers for every request. */
  headers: () => Promise<Record<string, string>>;
  retry: RetryPolicy;
  firstEventMs: number;
  idleMs: number;
  maxEventSize: number;
  reducerLimits: ReducerLimits;
  streamLimits: StreamLimits;
  /** Events per replay page. */
  replayLimit: number;
  /** Largest replay answer read at once, bytes. */
  replayMaxBytes: number;
  /** Consecutive failed stream attempts after which the turn is replayed. */
  replayAfterFailures: number;
  now: () => number;
  random: () => number;
  network: NetworkMonitor;
  emit: (diagnostic: Diagnostic) => void;
  persistence: Persistence;
  /** Schedules a batched notification (an animation frame or a microtask). */
  schedule: (callback: () => void) => void;
  /** Called (batched) after the snapshot changed. */
  onChange: () => void;
  /** Tabs of the namespace share one stream per turn; absent: this tab streams alone. */
  share?: TabShare;
}

/** Where a turn came from, known before its events say it. */
export interface TurnOrigin {
  conversationId?: string;
  messageId?: string;
  operationId?: string;
}

/** `relay`: a stream message another tab received and passed on. */
type Source = 'stream' | 'replay' | 'alongside' | 'relay';

interface ReplayRequest {
  reason: 'stall' | 'gap' | 'ended' | 'closed' | 'failing' | 'integrity' | 'rebuild' | 'adopt';
}

const FOLD_CODES: ReadonlySet<LifelineErrorCode> = new Set(['turn_not_found', 'turn_expired']);

/** A turn being followed (the `Turn` handle the app holds). */
export class TurnFollower implements Turn {
  readonly id: string;
  readonly completed: Promise<TurnSnapshot>;
  #resolveCompleted!: (snapshot: TurnSnapshot) => void;

  readonly #deps: FollowerDeps;
  #state: TurnState;
  #status: TurnStatus = 'pending';
  #error: LifelineError | undefined;
  #connection: ConnectionInfo = Object.freeze({ state: 'idle', attempt: 0 });
  #recovered: RecoveryInfo | undefined;
  #stall: StallInfo | undefined;
  #snapshot: TurnSnapshot | undefined;
  readonly #listeners = createEmitter<void>();
  readonly #batcher: Batcher;
  readonly #iterators = new Set<EventQueue>();
  #origin: TurnOrigin = {};
  #createdAt: number;

  /** The main loop is running. */
  #running = false;
  /** The app has not closed this handle (turns restored or adopted are wanted too). */
  #wanted = true;
  /** Resolved when the current replay phase is over. */
  #replayWaiters: (() => void)[] = [];
  /** Not following (before start, after close or dispose). */
  #following = false;
  #disposed = false;
  /** Ended (and verified) or failed: nothing changes any more. */
  #done = false;
  /** Failed without folding: a later recover may follow it again. */
  #revivable = false;
  #abort: AbortController | undefined;
  #wake: (() => void) | undefined;
  #replayRequest: ReplayRequest | undefined;
  #inReplay = false;
  #alongside: AbortController | undefined;
  #rebuilt = false;
  /** A stream message was invalid: the attempt was aborted for this. */
  #streamFailure: Failure | undefined;

  readonly #streamBackoff: Backoff;
  #cleanCloses = 0;
  #streamFailures = 0;
  #authRetried = false;
  #serverRetryMs: number | undefined;
  /** The last stream attempt ended by a cut (not by our own abort): the next open is a resume. */
  #cut = false;
  #appliedOnConnection = 0;
  /** Counting the burst a resumed connection delivers at once (its backlog). */
  #resumeBurst: { at: number; events: number } | undefined;

  #watchdog: ReturnType<typeof setTimeout> | undefined;
  #watching: 'stream' | 'replay' | undefined;
  #lastHeard = 0;
  #heardAny = false;
  #timedOut = false;

  /** Joined the tabs' share of this turn: stops waiting for the lock and listening when aborted. */
  #shareCancel: AbortController | undefined;
  #unlisten: (() => void) | undefined;
  /** This tab holds the turn's lock: the only tab with a stream. */
  #leading = false;
  /** The `watcher` diagnostic was emitted since joining. */
  #watcherSaid = false;
  /** The main loop waits on relayed messages (a granted lock wakes it). */
  #watchingRelay = false;
  /** Accepted stream messages not yet passed on to the other tabs. */
  #outgoing: [string, string][] | undefined;

  constructor(id: string, deps: FollowerDeps) {
    this.id = id;
    this.#deps = deps;
    this.#state = initialTurnState(id);
    this.#createdAt = deps.now();
    this.#streamBackoff = createBackoff(deps.retry, { random: deps.random, now: deps.now });
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.completed = new Promise((resolve) => (this.#resolveCompleted = resolve));
    deps.persistence.track(id, () => this.#meta());
  }

  // ------------------------------------------------------------------ external store

  /** The current snapshot; the same object until something changes. */
  readonly getSnapshot = (): TurnSnapshot => {
    if (this.#snapshot !== undefined) return this.#snapshot;
    const state = this.#state;
    const conversationId = state.conversationId ?? this.#origin.conversationId;
    const messageId = state.messageId ?? this.#origin.messageId;
    const endError = state.end?.error;
    const snapshot: TurnSnapshot = {
      id: this.id,
      status: this.#status,
      text: turnText(state),
      actions: state.actions,
      lastSeq: state.lastSeq,
      connection: this.#connection,
      ...(conversationId === undefined ? {} : { conversationId }),
      ...(messageId === undefined ? {} : { messageId }),
      ...(this.#error === undefined ? {} : { error: this.#error }),
      ...(endError === undefined ? {} : { endError }),
      ...(this.#recovered === undefined ? {} : { recovered: this.#recovered }),
      ...(this.#stall === undefined ? {} : { stall: this.#stall }),
    };
    this.#snapshot = Object.freeze(snapshot);
    return this.#snapshot;
  };

  /** Calls `listener` (batched) after changes; returns unsubscribe. */
  readonly subscribe = (listener: () => void): (() => void) => this.#listeners.subscribe(listener);

  /** Events applied from now on, until the turn ends or is closed. */
  [Symbol.asyncIterator](): AsyncIterator<TurnEvent> {
    const queue = new EventQueue(() => this.#iterators.delete(queue));
    if (this.#done || this.#disposed) queue.end();
    else this.#iterators.add(queue);
    return queue;
  }

  /** Asks the server to cancel the turn; the end arrives as `turn.end` status `cancelled`. */
  async cancel(): Promise<void> {
    if (this.#disposed) throw new CancelledError('disposed', 'The client was disposed.');
    const headers = await this.#deps.headers();
    await cancelTurn({ baseUrl: this.#deps.baseUrl, fetch: this.#deps.fetch, headers, now: this.#deps.now }, this.id);
  }

  /** Stops following (storage keeps what arrived); `client.turn(id)` follows again. */
  close(): void {
    this.#wanted = false;
    this.#releaseReplayWaiters();
    if (!this.#following) return;
    this.#following = false;
    this.#stopNetwork();
    for (const queue of this.#iterators) queue.end();
    this.#iterators.clear();
    if (!this.#done) this.#setConnection({ state: 'idle', attempt: this.#streamBackoff.attempt });
  }

  // ------------------------------------------------------------------ client side

  /** True once ended or failed. */
  get done(): boolean {
    return this.#done;
  }

  /** Failed for a reason that may pass (auth, network): {@link revive} may follow it again. */
  get revivable(): boolean {
    return this.#done && this.#revivable;
  }

  get lastSeq(): number {
    return this.#state.lastSeq;
  }

  /** Epoch ms the client first knew the turn (stored, or when followed). */
  get createdAt(): number {
    return this.#createdAt;
  }

  get conversationId(): string | undefined {
    return this.#state.conversationId ?? this.#origin.conversationId;
  }

  /** Records what is known before the events (acceptance); writes the row at once. */
  setOrigin(origin: TurnOrigin): void {
    this.#origin = { ...this.#origin, ...origin };
    this.#changed();
    this.#deps.persistence.saveTurn(this.id);
  }

  /** Restores what storage holds (before any network). */
  restore(loaded: LoadedTurn): void {
    const { record, events } = loaded;
    this.#origin = {
      conversationId: record.conversationId,
      ...(record.messageId === undefined ? {} : { messageId: record.messageId }),
      ...(record.operationId === undefined ? {} : { operationId: record.operationId }),
    };
    this.#createdAt = record.createdAt;
    if (record.text !== undefined) {
      // A folded turn: ended, its events are gone.
      this.#state = foldedTurnState(this.id, {
        lastSeq: record.lastSeq,
        text: record.text,
        actions: record.actions ?? [],
        conversationId: record.conversationId,
        ...(record.messageId === undefined ? {} : { messageId: record.messageId }),
      });
      this.#status = record.status;
      if (record.error !== undefined) this.#error = errorFromJson(record.error);
      this.#done = true;
      this.#changed();
      this.#resolveCompleted(this.getSnapshot());
      return;
    }
    let state = this.#state;
    for (const event of events) state = applyEvent(state, event, this.#deps.reducerLimits);
    this.#state = state;
    this.#heardAny = state.lastSeq > 0;
    this.#status = this.#liveStatus();
    // A row without events (accepted, nothing arrived yet) restores where it came from, not text.
    if (state.lastSeq > 0) {
      this.#recovered = { path: 'reload', events: state.lastSeq, at: this.#deps.now() };
      this.#emit({ type: 'recovered', turnId: this.id, path: 'reload', events: state.lastSeq });
    }
    this.#changed();
  }

  /**
   * Starts (or resumes) following, unless the app closed the handle. `replayFirst` asks
   * the log before streaming (adopted turns); the promise then resolves once that replay
   * is over (or the turn settled), else at once.
   */
  start(replayFirst = false): Promise<void> {
    if (this.#disposed || !this.#wanted) return Promise.resolve();
    this.#following = true;
    if (this.#done) return Promise.resolve();
    if (replayFirst) this.#replayRequest ??= { reason: 'adopt' };
    const replayed = replayFirst ? new Promise<void>((resolve) => this.#replayWaiters.push(resolve)) : Promise.resolve();
    void this.#run();
    return replayed;
  }

  /** The app asked for the turn again after closing it. */
  reopen(): void {
    this.#wanted = true;
    if (!this.#following) void this.start();
  }

  /** A turn that failed for a reason that may pass (auth, network) is followed again, through replay. */
  revive(): Promise<void> {
    if (!this.revivable || this.#disposed) return Promise.resolve();
    this.#done = false;
    this.#revivable = false;
    this.#error = undefined;
    this.#authRetried = false;
    this.#status = this.#liveStatus();
    this.#changed();
    return this.start(true);
  }

  /**
   * Replays the log next to whatever the main loop does (recovery at start, `recover()`):
   * both paths merge by seq. No-op while the main loop is replaying itself. A failure
   * worth retrying hands the replay to the main loop; resolves once that is over.
   */
  async replayAlongside(): Promise<void> {
    if (this.#done || !this.#following || this.#inReplay || this.#alongside !== undefined) return;
    const controller = new AbortController();
    this.#alongside = controller;
    let applied = 0;
    let retry = false;
    try {
      for (;;) {
        const headers = await this.#deps.headers();
        if (controller.signal.aborted || this.#done) return;
        const page = await this.#fetchPage(headers, controller.signal);
        if (controller.signal.aborted || this.#done) return;
        if (!page.ok) {
          // Network, 5xx, 429: the main loop's replay retries it (backoff, Retry-After, a visible give-up).
          retry = page.failure.disposition === 'retry';
          if (retry) break;
          this.#emit({ type: 'failed', scope: 'replay', id: this.id, error: page.failure.error });
          return;
        }
        for (const decoded of page.events) {
          const before = this.#state.lastSeq;
          if (!this.#ingestDecoded(decoded, 'alongside')) return;
          if (this.#state.lastSeq > before) applied += 1;
        }
        if (!page.hasMore || page.events.length === 0 || this.#ended) break;
      }
      if (applied > 0) this.#markRecovered('replay', applied);
    } catch (error) {
      if (!controller.signal.aborted) this.#emit({ type: 'failed', scope: 'replay', id: this.id, error: asLifelineError(error) });
    } finally {
      if (this.#alongside === controller) this.#alongside = undefined;
    }
    if (retry && this.#active) {
      const over = new Promise<void>((resolve) => this.#replayWaiters.push(resolve));
      this.#requestReplay({ reason: 'failing' });
      await over;
    }
  }

  /** The browser went online or offline. */
  onNetwork(online: boolean): void {
    if (online) this.#wakeUp();
  }

  /** Ends every connection and timer for good. */
  dispose(): void {
    this.close();
    this.#disposed = true;
    this.#batcher.cancel();
  }

  // ------------------------------------------------------------------ main loop

  /** The applied log holds turn.end (a getter, so TypeScript does not narrow it across awaits). */
  get #ended(): boolean {
    return this.#state.phase === 'ended';
  }

  get #active(): boolean {
    return this.#following && !this.#done && !this.#disposed;
  }

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#active) {
        if (this.#ended) await this.#settle();
        else if (this.#replayRequest !== undefined) await this.#replayPhase();
        else if (!this.#deps.network.online()) await this.#waitOnline();
        else if (this.#deps.share !== undefined && !this.#leading) await this.#watchRelay(this.#deps.share);
        else {
          this.#watch('stream');
          await this.#afterAttempt(await this.#streamAttempt());
        }
      }
    } catch (error) {
      // A bug, not a network condition: fail visibly rather than spin.
      this.#fail(asLifelineError(error), 'stream', false);
    } finally {
      this.#running = false;
      this.#unwatch();
    }
  }

  async #streamAttempt(): Promise<SseOutcome> {
    const controller = new AbortController();
    this.#abort = controller;
    this.#streamFailure = undefined;
    let headers: Record<string, string>;
    try {
      headers = await this.#deps.headers();
    } catch (cause) {
      return { kind: 'failed', failure: { error: new TransportError('network_error', 'The headers function failed.', { cause }), disposition: 'retry' } };
    }
    if (controller.signal.aborted || this.#ended) return { kind: 'aborted' };
    const lastEventId = this.#state.lastSeq;
    const request = withoutHeaders(headers, ['accept', 'last-event-id']);
    request['accept'] = 'text/event-stream';
    // Our own cursor: the last seq applied here, never an id the wire sent.
    if (lastEventId > 0) request['last-event-id'] = String(lastEventId);
    const attempt = this.#streamBackoff.attempt;
    this.#appliedOnConnection = 0;
    this.#emit({ type: 'connect', turnId: this.id, attempt, lastEventId });
    this.#setConnection({ state: 'connecting', attempt });
    const outcome = await runSseAttempt({
      url: endpoint(this.#deps.baseUrl, `/turns/${encodeURIComponent(this.id)}/events`),
      headers: request,
      fetch: this.#deps.fetch,
      signal: controller.signal,
      limits: this.#deps.streamLimits,
      now: this.#deps.now,
      onOpen: () => this.#onOpen(lastEventId),
      onMessage: (type, data) => this.#onStreamMessage(type, data, controller),
      onRetry: (ms) => {
        this.#serverRetryMs = ms;
      },
    });
    if (this.#abort === controller) this.#abort = undefined;
    if (this.#streamFailure !== undefined) return { kind: 'failed', failure: this.#streamFailure };
    return outcome;
  }

  #onOpen(lastEventId: number): void {
    const resumed = this.#cut && lastEventId > 0;
    this.#cut = false;
    this.#authRetried = false;
    this.#emit({ type: 'open', turnId: this.id, status: 200 });
    if (lastEventId > 0) this.#emit({ type: 'resumed', turnId: this.id, fromSeq: lastEventId });
    this.#resumeBurst = resumed ? { at: this.#deps.now(), events: 0 } : undefined;
    this.#setConnection({ state: 'open', attempt: this.#streamBackoff.attempt });
    if (this.#status === 'reconnecting') this.#setStatus(this.#liveStatus());
  }

  /** Hot path: one SSE message. */
  #onStreamMessage(type: string, data: string, controller: AbortController): void {
    this.#lastHeard = this.#deps.now();
    this.#heardAny = true;
    if (type === 'heartbeat') {
      // Passed on too: the other tabs' stall watchdogs hear that the stream is alive.
      this.#relay(type, data);
      return;
    }
    const decoded = decodeStreamEvent(data, this.id, this.#deps.maxEventSize);
    if (decoded.kind === 'error') {
      // The stream is not trustworthy any more: drop it and come back through backoff.
      this.#streamFailure = { error: decoded.error, disposition: 'retry' };
      controller.abort();
      return;
    }
    this.#relay(type, data);
    this.#ingestDecoded(decoded, 'stream');
  }

  // ------------------------------------------------------------------ sharing the stream between tabs

  /**
   * Waits in the lock queue while applying what the leading tab relays, under the
   * ordinary stall watchdog: silence past it replays from the server, as for a stream.
   */
  async #watchRelay(share: TabShare): Promise<void> {
    this.#joinShare(share);
    if (this.#leading) return;
    share.watch(this.id);
    this.#watch('stream');
    this.#watchingRelay = true;
    try {
      await this.#sleep(Number.POSITIVE_INFINITY);
    } finally {
      this.#watchingRelay = false;
    }
  }

  #joinShare(share: TabShare): void {
    if (this.#shareCancel !== undefined) return;
    const cancel = new AbortController();
    this.#shareCancel = cancel;
    this.#watcherSaid = false;
    this.#unlisten = share.listen(this.id, (batch) => this.#onRelay(batch));
    const released = new Promise<void>((resolve) => cancel.signal.addEventListener('abort', () => resolve(), { once: true }));
    share
      .leadership(this.id)
      .hold(async () => {
        // Granted just as this tab stopped following: hand it on at once.
        if (cancel.signal.aborted) return;
        this.#leading = true;
        share.hello(this.id);
        this.#emit({ type: 'shared', turnId: this.id, role: 'leader' });
        if (this.#watchingRelay) this.#wakeUp();
        await released;
      }, cancel.signal)
      .catch((error: unknown) => {
        // Only work can reject, and work only waits: a bug, shown rather than swallowed.
        this.#emit({ type: 'failed', scope: 'stream', id: this.id, error: asLifelineError(error) });
      });
  }

  #leaveShare(): void {
    this.#shareCancel?.abort();
    this.#shareCancel = undefined;
    this.#unlisten?.();
    this.#unlisten = undefined;
    this.#leading = false;
  }

  /** Passes an accepted stream message on to the other tabs, one batch per task. */
  #relay(type: string, data: string): void {
    const share = this.#deps.share;
    // Nobody watching: no clone of every event for an empty channel. A watcher that
    // arrives later learns from the next batch's lastSeq that it is behind, and replays.
    if (share === undefined || !share.isWatched(this.id)) return;
    if (this.#outgoing === undefined) {
      const batch: [string, string][] = [];
      this.#outgoing = batch;
      // Posted once the batch was applied here, with the cursor it led to.
      queueMicrotask(() => {
        if (this.#outgoing === batch) this.#outgoing = undefined;
        share.publish({ turnId: this.id, lastSeq: this.#state.lastSeq, messages: batch });
      });
    }
    this.#outgoing.push([type, data]);
  }

  /** Messages the leading tab accepted: applied here exactly like this tab's own stream. */
  #onRelay({ messages, lastSeq }: RelayBatch): void {
    // A late batch of a previous leader: this tab's own stream is the one to trust now.
    if (this.#leading || !this.#active) return;
    if (!this.#watcherSaid) {
      this.#watcherSaid = true;
      this.#emit({ type: 'shared', turnId: this.id, role: 'watcher' });
    }
    this.#lastHeard = this.#deps.now();
    this.#heardAny = true;
    for (const [type, data] of messages) {
      if (type === 'heartbeat') continue;
      if (!this.#ingestDecoded(decodeStreamEvent(data, this.id, this.#deps.maxEventSize), 'relay')) return;
    }
    // Behind the leader (joined late, or it applied events by replay): heartbeats alone would hide it.
    if (lastSeq > this.#state.lastSeq && !this.#ended && !this.#inReplay && this.#replayRequest === undefined) {
      this.#emit({ type: 'gap', turnId: this.id, expected: this.#state.lastSeq + 1, got: lastSeq });
      this.#requestReplay({ reason: 'gap' });
    }
  }

  async #afterAttempt(outcome: SseOutcome): Promise<void> {
    const healthy = this.#appliedOnConnection > 0;
    this.#resumeBurst = undefined;
    if (outcome.kind === 'closed' || outcome.kind === 'failed') this.#cut = true;
    if (!this.#active || this.#ended) return;
    if (healthy) this.#streamFailures = 0;
    switch (outcome.kind) {
      case 'aborted':
        return;
      case 'no-content':
        // 204: the turn ended and the server has nothing after our cursor for the stream.
        this.#requestReplay({ reason: 'ended' });
        return;
      case 'closed': {
        const cause = new TransportError('network_error', 'The stream closed before turn.end.');
        this.#emit({ type: 'disconnect', turnId: this.id, cause });
        this.#cleanCloses = healthy ? 0 : this.#cleanCloses + 1;
        if (this.#cleanCloses > 1) {
          this.#cleanCloses = 0;
          this.#requestReplay({ reason: 'closed' });
          return;
        }
        await this.#backoffWait(cause, healthy);
        return;
      }
      case 'failed': {
        const { error, disposition, retryAfterMs } = outcome.failure;
        if (error.kind === 'protocol') this.#emit({ type: 'protocol-error', turnId: this.id, error });
        this.#emit({ type: 'disconnect', turnId: this.id, cause: error });
        switch (disposition) {
          case 'retry':
            if (!healthy) this.#streamFailures += 1;
            if (this.#streamFailures >= this.#deps.replayAfterFailures) {
              // The stream keeps failing: ask the log, which may answer through another path.
              this.#streamFailures = 0;
              this.#requestReplay({ reason: 'failing' });
              return;
            }
            await this.#backoffWait(error, healthy, retryAfterMs);
            return;
          case 'auth':
            // 401/403: the next attempt re-reads the headers (a refreshed token); a second one is final.
            if (this.#authRetried) this.#fail(error, 'stream', false);
            else {
              this.#authRetried = true;
              this.#emit({ type: 'auth-refresh', turnId: this.id });
            }
            return;
          case 'rebuild':
            this.#startRebuild();
            return;
          case 'fatal':
            this.#fail(error, 'stream', FOLD_CODES.has(error.code));
            return;
        }
      }
    }
  }

  async #backoffWait(cause: LifelineError, afterHealthy: boolean, retryAfterMs?: number): Promise<void> {
    const delay = this.#streamBackoff.next({
      afterHealthy,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(this.#serverRetryMs === undefined ? {} : { baseDelayMs: this.#serverRetryMs }),
    });
    const attempt = this.#streamBackoff.attempt;
    if (delay === undefined) {
      this.#fail(new TransportError('retry_exhausted', 'Reconnecting took longer than retry.maxElapsedMs.', { cause }), 'stream', false);
      return;
    }
    if (this.#status !== 'stalled' && this.#status !== 'recovering') this.#setStatus('reconnecting');
    await this.#retryIn('stream', attempt, delay, cause);
  }

  /** Says a retry is due in `delayMs` and waits for it (or a wake-up). */
  async #retryIn(scope: 'stream' | 'replay', attempt: number, delayMs: number, cause: LifelineError): Promise<void> {
    this.#emit({ type: 'retry', scope, id: this.id, attempt, delayMs, cause });
    this.#setConnection({ state: 'waiting', attempt, nextRetryAt: this.#deps.now() + delayMs });
    await this.#sleep(delayMs);
  }

  async #waitOnline(): Promise<void> {
    this.#unwatch();
    this.#setConnection({ state: 'offline', attempt: this.#streamBackoff.attempt });
    // Woken by the `online` event (onNetwork), close or dispose.
    while (this.#active && !this.#deps.network.online()) await this.#sleep(Number.POSITIVE_INFINITY);
  }

  // ------------------------------------------------------------------ replay

  #requestReplay(request: ReplayRequest): void {
    this.#replayRequest ??= request;
    this.#abort?.abort();
    this.#wakeUp();
  }

  async #replayPhase(): Promise<void> {
    this.#replayRequest = undefined;
    this.#inReplay = true;
    this.#alongside?.abort();
    this.#unwatch();
    const fromSeq = this.#state.lastSeq;
    if (this.#status !== 'stalled') this.#setStatus('recovering');
    this.#setConnection({ state: 'idle', attempt: this.#streamBackoff.attempt });
    this.#emit({ type: 'recovering', turnId: this.id, path: 'replay', fromSeq });
    const backoff = createBackoff(this.#deps.retry, { random: this.#deps.random, now: this.#deps.now });
    let authRetried = false;
    let applied = 0;
    try {
      while (this.#active && !this.#ended) {
        if (!this.#deps.network.online()) {
          await this.#waitOnline();
          continue;
        }
        const controller = new AbortController();
        this.#abort = controller;
        let failure: Failure;
        try {
          const headers = await this.#deps.headers();
          this.#watch('replay');
          const page = await this.#fetchPage(headers, controller.signal);
          this.#unwatch();
          if (!this.#active) return;
          if (page.ok) {
            backoff.reset();
            if (this.#status === 'stalled') this.#setStatus('recovering');
            for (const decoded of page.events) {
              const before = this.#state.lastSeq;
              if (!this.#ingestDecoded(decoded, 'replay')) return;
              if (this.#state.lastSeq > before) applied += 1;
              if (this.#ended) break;
            }
            if (this.#ended) break;
            // The turn row is read after the events: it may already count events this page lacks.
            const more = page.hasMore || page.turn.lastSeq > this.#state.lastSeq;
            if (more && page.events.length > 0) continue;
            if (more) {
              failure = {
                error: new ProtocolError('invalid_response', `The replay answer promised events after seq ${this.#state.lastSeq} but held none.`),
                disposition: 'retry',
              };
            } else if (page.turn.status !== 'pending' && page.turn.status !== 'streaming') {
              // The server says ended but its log holds no turn.end after our cursor: nothing will fix that.
              this.#fail(new ProtocolError('seq_mismatch', `The turn is ${page.turn.status} but its log has no turn.end after seq ${this.#state.lastSeq}.`), 'replay', true);
              return;
            } else {
              break;
            }
          } else {
            failure = page.failure;
          }
        } catch (cause) {
          failure = { error: new TransportError('network_error', 'The headers function failed.', { cause }), disposition: 'retry' };
        } finally {
          this.#unwatch();
          if (this.#abort === controller) this.#abort = undefined;
        }
        if (this.#timedOut) {
          this.#timedOut = false;
          failure = { error: new TransportError('timeout', `The replay request was silent for ${this.#deps.idleMs} ms.`), disposition: 'retry' };
        } else if (controller.signal.aborted) {
          continue;
        }
        if (!this.#active) return;
        switch (failure.disposition) {
          case 'retry': {
            const delay = backoff.next(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs });
            if (delay === undefined) {
              this.#fail(new TransportError('retry_exhausted', 'Replaying took longer than retry.maxElapsedMs.', { cause: failure.error }), 'replay', false);
              return;
            }
            await this.#retryIn('replay', backoff.attempt, delay, failure.error);
            continue;
          }
          case 'auth':
            if (authRetried) {
              this.#fail(failure.error, 'replay', false);
              return;
            }
            authRetried = true;
            this.#emit({ type: 'auth-refresh', turnId: this.id });
            continue;
          case 'rebuild':
            this.#emit({ type: 'protocol-error', turnId: this.id, error: failure.error });
            this.#resetState();
            continue;
          case 'fatal':
            this.#fail(failure.error, 'replay', FOLD_CODES.has(failure.error.code));
            return;
        }
      }
      if (!this.#active) return;
      this.#markRecovered('replay', applied);
      this.#cut = false;
      this.#streamFailures = 0;
      this.#cleanCloses = 0;
      if (!this.#ended) {
        this.#setStatus(this.#liveStatus());
        this.#setConnection({ state: 'idle', attempt: this.#streamBackoff.attempt });
      }
    } finally {
      this.#inReplay = false;
      // An ended turn is released once settled (verified), so `recover()` answers final snapshots.
      if (!this.#ended) this.#releaseReplayWaiters();
    }
  }

  #releaseReplayWaiters(): void {
    for (const resolve of this.#replayWaiters.splice(0)) resolve();
  }

  #fetchPage(headers: Record<string, string>, signal: AbortSignal) {
    return fetchReplayPage({
      baseUrl: this.#deps.baseUrl,
      fetch: this.#deps.fetch,
      headers,
      turnId: this.id,
      after: this.#state.lastSeq,
      limit: this.#deps.replayLimit,
      signal,
      maxBytes: this.#deps.replayMaxBytes,
      now: this.#deps.now,
    });
  }

  // ------------------------------------------------------------------ applying events

  /** Applies or drops one decoded event; false when the path that brought it must stop. */
  #ingestDecoded(decoded: DecodeResult, source: Source): boolean {
    if (decoded.kind === 'event') return this.#ingest(decoded.event, source);
    if (decoded.kind === 'unknown') {
      this.#emit({ type: 'unknown-event', turnId: this.id, eventType: decoded.type });
      // Skipped, but its seq is consumed: otherwise the next event would look like a gap forever.
      if (decoded.seq !== undefined && decoded.seq === this.#state.lastSeq + 1) {
        this.#state = skipEvent(this.#state, decoded.seq);
        this.#changed();
      }
      return true;
    }
    this.#emit({ type: 'protocol-error', turnId: this.id, error: decoded.error });
    if (source === 'replay') this.#fail(decoded.error, 'replay', true);
    return false;
  }

  #ingest(event: TurnEvent, source: Source): boolean {
    const verdict = classifyEvent(this.#state, event, this.#deps.reducerLimits);
    switch (verdict) {
      case 'next':
        this.#apply(event, source);
        return true;
      case 'duplicate':
        this.#emit({ type: 'duplicate', turnId: this.id, seq: event.seq });
        return true;
      case 'after-end':
        this.#emit({
          type: 'protocol-error',
          turnId: this.id,
          error: new ProtocolError('seq_mismatch', `Event seq ${event.seq} arrived after turn.end (seq ${this.#state.lastSeq}).`),
        });
        return true;
      case 'gap':
        this.#emit({ type: 'gap', turnId: this.id, expected: this.#state.lastSeq + 1, got: event.seq });
        if (source === 'stream') this.#requestReplay({ reason: 'gap' });
        // A replay under way fills the gap anyway; interrupting it would only start it over.
        else if (source === 'relay') {
          if (!this.#inReplay) this.#requestReplay({ reason: 'gap' });
        } else if (source === 'replay') {
          this.#fail(new ProtocolError('seq_mismatch', `The replayed log skips from seq ${this.#state.lastSeq} to ${event.seq}.`), 'replay', true);
        }
        return false;
      case 'foreign': {
        const error = new ProtocolError('seq_mismatch', `An event of turn ${event.turnId} arrived on turn ${this.id}.`);
        if (source === 'stream') {
          // Reported with the attempt's end, like any protocol error of the stream.
          this.#streamFailure = { error, disposition: 'retry' };
          this.#abort?.abort();
          return false;
        }
        this.#emit({ type: 'protocol-error', turnId: this.id, error });
        if (source === 'replay') this.#fail(error, 'replay', true);
        return false;
      }
      case 'too-large':
        this.#fail(
          new ProtocolError('turn_too_large', `The turn's text would pass ${this.#deps.reducerLimits.maxTextLength} code units.`),
          source === 'stream' || source === 'relay' ? 'stream' : 'replay',
          true,
        );
        return false;
    }
  }

  /** Hot path: `event` was classified `next`. */
  #apply(event: TurnEvent, source: Source): void {
    this.#state = applyNext(this.#state, event);
    this.#deps.persistence.append(this.id, event);
    if (this.#iterators.size > 0) for (const queue of this.#iterators) queue.push(event);
    this.#streamBackoff.reset();
    this.#cleanCloses = 0;
    this.#heardAny = true;
    if (source === 'stream') {
      this.#appliedOnConnection += 1;
      if (this.#resumeBurst !== undefined) this.#countResumeBurst(this.#resumeBurst);
      if (this.#status !== 'streaming') this.#setStatus('streaming');
      if (this.#connection.attempt !== 0) this.#setConnection({ state: 'open', attempt: 0 });
    } else if (source === 'relay' && this.#status !== 'streaming') this.#setStatus('streaming');
    if (event.type === 'turn.end') {
      // The loop settles it: verify, then complete.
      this.#abort?.abort();
      this.#wakeUp();
    }
    this.#changed();
  }

  /** Verifies the ended turn's text; completes it, or rebuilds once from a full replay. */
  async #settle(): Promise<void> {
    this.#unwatch();
    this.#alongside?.abort();
    const end = this.#state.end;
    if (end === undefined) {
      // Restored ended state without its end event cannot happen for unfolded turns.
      this.#finish();
      return;
    }
    const text = turnText(this.#state);
    let matches = text.length === end.textLength;
    if (matches) {
      let digest: string;
      try {
        digest = await sha256Hex(text);
      } catch {
        // No Web Crypto outside secure contexts (plain HTTP on a LAN): the check still runs, in JavaScript.
        digest = sha256HexSync(text);
      }
      matches = digest === end.textSha256;
    }
    if (!this.#active) return;
    if (matches) {
      this.#finish();
      return;
    }
    this.#emit({ type: 'integrity-mismatch', turnId: this.id, expectedLength: end.textLength, actualLength: text.length });
    if (this.#rebuilt) {
      this.#fail(new ProtocolError('integrity_mismatch', 'The text still differs from turn.end after a full replay.'), 'replay', true);
      return;
    }
    this.#startRebuild();
  }

  /** Throws the local copy away and replays the whole log (once per turn). */
  #startRebuild(): void {
    this.#rebuilt = true;
    this.#resetState();
    this.#requestReplay({ reason: 'rebuild' });
  }

  #resetState(): void {
    this.#state = initialTurnState(this.id);
    this.#deps.persistence.discard(this.id);
    this.#changed();
  }

  #finish(): void {
    const end = this.#state.end;
    this.#done = true;
    this.#stopNetwork();
    const status = end?.status ?? this.#status;
    this.#status = status;
    this.#setConnection({ state: 'closed', attempt: 0 });
    this.#fold(status);
    if (end !== undefined) this.#emit({ type: 'completed', turnId: this.id, status: end.status });
    this.#settled();
  }

  #fail(error: LifelineError, scope: 'stream' | 'replay', fold: boolean): void {
    if (this.#done) return;
    this.#done = true;
    this.#revivable = !fold;
    this.#error = error;
    this.#status = 'failed';
    this.#stopNetwork();
    this.#setConnection({ state: 'closed', attempt: this.#streamBackoff.attempt });
    this.#emit({ type: 'failed', scope, id: this.id, error });
    if (fold) this.#fold('failed', error);
    this.#settled();
  }

  /** Stores the ended turn as one row with its text (its events are dropped). */
  #fold(status: TurnStatus, error?: LifelineError): void {
    const state = this.#state;
    void this.#deps.persistence.end(this.id, {
      status,
      text: turnText(state),
      actions: state.actions,
      lastSeq: state.lastSeq,
      ...(error === undefined ? {} : { error }),
    });
  }

  #settled(): void {
    this.#releaseReplayWaiters();
    this.#changed();
    for (const queue of this.#iterators) queue.end();
    this.#iterators.clear();
    this.#resolveCompleted(this.getSnapshot());
  }

  /**
   * A resumed connection first delivers what was logged while the client was away, in
   * one burst (one network chunk, parsed in one task); that burst is what `resume`
   * recovered. Events after it are just live.
   */
  #countResumeBurst(burst: { at: number; events: number }): void {
    burst.events += 1;
    if (burst.events > 1) return;
    queueMicrotask(() => {
      if (this.#resumeBurst === burst) this.#resumeBurst = undefined;
      this.#markRecovered('resume', burst.events, burst.at);
    });
  }

  #markRecovered(path: RecoveryPath, events: number, at = this.#deps.now()): void {
    this.#recovered = { path, events, at };
    this.#emit({ type: 'recovered', turnId: this.id, path, events });
    this.#changed();
  }

  // ------------------------------------------------------------------ watchdogs

  /** Starts watching for silence; a new mode starts a fresh window. */
  #watch(mode: 'stream' | 'replay'): void {
    if (this.#watching === mode && this.#watchdog !== undefined) return;
    this.#watching = mode;
    this.#lastHeard = this.#deps.now();
    this.#timedOut = false;
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => this.#checkWatchdog(), this.#silenceLimit());
  }

  #unwatch(): void {
    this.#watching = undefined;
    clearTimeout(this.#watchdog);
    this.#watchdog = undefined;
  }

  #silenceLimit(): number {
    return this.#watching === 'stream' && !this.#heardAny ? this.#deps.firstEventMs : this.#deps.idleMs;
  }

  /** Timer-driven, not reset per event: events only stamp `#lastHeard` (cheap on the hot path). */
  #checkWatchdog(): void {
    this.#watchdog = undefined;
    if (this.#watching === undefined || !this.#active) return;
    const limit = this.#silenceLimit();
    const silent = this.#deps.now() - this.#lastHeard;
    if (silent < limit) {
      this.#watchdog = setTimeout(() => this.#checkWatchdog(), limit - silent);
      return;
    }
    if (this.#watching === 'replay') {
      this.#timedOut = true;
      this.#watching = undefined;
      this.#abort?.abort();
      return;
    }
    const watchdog = this.#heardAny ? 'idle' : 'first-event';
    this.#watching = undefined;
    this.#stall = { at: this.#deps.now(), watchdog };
    this.#setStatus('stalled');
    this.#emit({ type: 'stalled', turnId: this.id, watchdog, silentMs: silent });
    this.#requestReplay({ reason: 'stall' });
  }

  // ------------------------------------------------------------------ plumbing

  #liveStatus(): TurnStatus {
    return this.#state.phase === 'pending' ? 'pending' : 'streaming';
  }

  /** Waits `ms` (forever when infinite) or until {@link #wakeUp}. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        clearTimeout(timer);
        if (this.#wake === done) this.#wake = undefined;
        resolve();
      };
      if (Number.isFinite(ms)) timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  #wakeUp(): void {
    this.#wake?.();
  }

  #stopNetwork(): void {
    this.#leaveShare();
    this.#abort?.abort();
    this.#abort = undefined;
    this.#alongside?.abort();
    this.#unwatch();
    this.#wakeUp();
  }

  #setStatus(status: TurnStatus): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#changed();
  }

  #setConnection(connection: ConnectionInfo): void {
    const current = this.#connection;
    if (current.state === connection.state && current.attempt === connection.attempt && current.nextRetryAt === connection.nextRetryAt) return;
    this.#connection = Object.freeze(connection);
    this.#changed();
  }

  #changed(): void {
    this.#snapshot = undefined;
    this.#batcher.request();
  }

  #emit(diagnostic: DistributiveOmit<Diagnostic, 'at'>): void {
    this.#deps.emit({ ...diagnostic, at: this.#deps.now() } as Diagnostic);
  }

  /** The row persistence writes; none until the conversation is known (turn.start or acceptance). */
  #meta(): TurnMeta | undefined {
    const conversationId = this.conversationId;
    if (conversationId === undefined) return undefined;
    const messageId = this.#state.messageId ?? this.#origin.messageId;
    return {
      conversationId,
      ...(messageId === undefined ? {} : { messageId }),
      ...(this.#origin.operationId === undefined ? {} : { operationId: this.#origin.operationId }),
      status: this.#status,
      createdAt: this.#createdAt,
    };
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Header names compare case-insensitively: drop ours from the app's before setting them. */
function withoutHeaders(headers: Record<string, string>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) if (!names.includes(key.toLowerCase())) out[key] = value;
  return out;
}

/** A pull queue behind one `for await` over a turn's events. */
class EventQueue implements AsyncIterator<TurnEvent> {
  readonly #items: TurnEvent[] = [];
  /** Each seq is yielded once, even when an integrity rebuild applies the log again. */
  #lastSeq = 0;
  #waiting: ((result: IteratorResult<TurnEvent>) => void) | undefined;
  #ended = false;
  readonly #onReturn: () => void;

  constructor(onReturn: () => void) {
    this.#onReturn = onReturn;
  }

  push(event: TurnEvent): void {
    if (this.#ended || event.seq <= this.#lastSeq) return;
    this.#lastSeq = event.seq;
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting({ done: false, value: event });
    } else this.#items.push(event);
  }

  end(): void {
    this.#ended = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ done: true, value: undefined });
  }

  next(): Promise<IteratorResult<TurnEvent>> {
    const item = this.#items.shift();
    if (item !== undefined) return Promise.resolve({ done: false, value: item });
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  return(): Promise<IteratorResult<TurnEvent>> {
    this.end();
    this.#items.length = 0;
    this.#onReturn();
    return Promise.resolve({ done: true, value: undefined });
  }
}
