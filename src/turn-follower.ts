/**
 * Follows one turn: one main loop (a stream attempt, a replay page or a wait at a time),
 * the stall watchdog, the integrity check at `turn.end`, and the external store the UI
 * reads. One instance per turn id per client.
 *
 * Every event, whatever brought it (stream, replay, a replay racing the stream, storage),
 * goes through `#take` and the pure reducer, so each seq is applied exactly once, in order.
 */
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { createBackoff, type Backoff, type RetryHint, type RetryPolicy } from './core/backoff.js';
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
import { asLifelineError, errorFromJson, LifelineError, ProtocolError, TransportError } from './errors.js';
import { decodeEvent, decodeEventValue, type DecodeResult } from './protocol/decode.js';
import { sha256Hex } from './protocol/integrity.js';
import { cancelAnswerSchema, replayAnswerSchema, type TurnEvent } from './protocol/schemas.js';
import type { Persistence, TurnMeta } from './storage/persistence.js';
import type { LoadedTurn, TurnStatus } from './storage/store.js';
import { endpoint, failureFromResponse, networkFailure, requestJson, type Failure } from './transport/http.js';
import type { NetworkMonitor } from './transport/network.js';
import { limitBody, type StreamLimits } from './transport/sse-connection.js';
import type { ConnectionInfo, ConnectionState, Diagnostic, DiagnosticType, RecoveryInfo, RecoveryPath, StallInfo, Turn, TurnSnapshot } from './types.js';

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
  /** Largest replay answer read at once, bytes (past it the page is asked again, halved). */
  replayMaxBytes: number;
  /** Failed stream attempts in a row after which the turn is replayed. */
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
}

/** Where a turn came from, known before its events say it. */
export interface TurnOrigin {
  conversationId?: string | undefined;
  messageId?: string | undefined;
  operationId?: string | undefined;
}

/** The fields of a turn's diagnostic of type `T` besides `type`, `at` and `turnId`. */
type Fields<T extends DiagnosticType> = Omit<Extract<Diagnostic, { type: T }>, 'type' | 'at' | 'turnId'>;

/** Feeds one `for await` over a turn's events; called without an event when it ends. */
type EventQueue = (event?: TurnEvent) => void;

/** Thrown out of fetch-event-source's callbacks to end an attempt without its own retry. */
const STOP = 0;
const RESOLVED = Promise.resolve();

/** `value` frozen, without its undefined members (optional fields are absent, never undefined). */
function frozen<T>(value: { [K in keyof T]: T[K] | undefined }): T {
  for (const key in value) if (value[key] === undefined) delete value[key];
  return Object.freeze(value) as T;
}

/** A turn being followed (the `Turn` handle the app holds). */
export class TurnFollower implements Turn {
  readonly id: string;
  readonly completed: Promise<TurnSnapshot>;
  #resolve!: (snapshot: TurnSnapshot) => void;

  readonly #deps: FollowerDeps;
  /** `/turns/{id}`: ids match the protocol's id pattern, so they need no escaping. */
  readonly #path: string;
  #state: TurnState;
  #status: TurnStatus = 'pending';
  #error: LifelineError | undefined;
  #connection: ConnectionInfo = Object.freeze({ state: 'idle', attempt: 0 });
  #recovered: RecoveryInfo | undefined;
  #stall: StallInfo | undefined;
  #snapshot: TurnSnapshot | undefined;
  #origin: TurnOrigin = {};
  #createdAt: number;
  readonly #listeners = createEmitter<void>();
  readonly #batcher: Batcher;
  readonly #queues = new Set<EventQueue>();

  #running = false;
  /** The app has not closed this handle (turns restored or adopted are wanted too). */
  #wanted = true;
  /** Between start and close. */
  #following = false;
  /** Ended (and verified) or failed: nothing changes any more. */
  #done = false;
  /** Failed for a reason that may pass (auth, network): `revive` may follow it again. */
  #revivable = false;
  /** The integrity check already rebuilt the turn once. */
  #rebuilt = false;
  /** The main loop replays (stall, gap, 204, repeated failures or closes, rebuild, adoption) instead of streaming. */
  #replay = false;
  /** Events the replay under way (the main loop's or alongside) applied. */
  #replayed = 0;
  /** The main loop's request in flight. */
  #abort: AbortController | undefined;
  #alongside: AbortController | undefined;
  /** Ends the main loop's current wait. */
  #wake: (() => void) | undefined;
  /** Resolved when the main loop's replay is over or the turn settled. */
  #waiters: (() => void)[] = [];

  /** One backoff for stream and replay retries, reset by every applied event (progress). */
  readonly #backoff: Backoff;
  /** The server's `retry:` (the backoff clamps it). */
  readonly #hint: RetryHint = {};
  /** Stream attempts in a row that applied nothing. */
  #misses = 0;
  #authRetried = false;
  /** A stream attempt ended by a cut: the next connection's first burst is what `resume` recovered. */
  #cut = false;
  /** Events the current stream connection applied. */
  #applied = 0;

  #watchdog: ReturnType<typeof setTimeout> | undefined;
  /** When the request in flight last heard anything (an event or a heartbeat). */
  #heard = 0;
  #heardAny = false;

  constructor(id: string, deps: FollowerDeps) {
    this.id = id;
    this.#deps = deps;
    this.#path = '/turns/' + id;
    this.#state = initialTurnState(id);
    this.#createdAt = deps.now();
    this.#backoff = createBackoff(deps.retry, deps);
    this.#batcher = createBatcher(() => {
      this.#listeners.emit();
      deps.onChange();
    }, deps.schedule);
    this.completed = new Promise((resolve) => (this.#resolve = resolve));
    deps.persistence.track(id, () => this.#meta());
  }

  // ------------------------------------------------------------------ the Turn handle

  /** The current snapshot; the same object until something changes. */
  readonly getSnapshot = (): TurnSnapshot => {
    const state = this.#state;
    return (this.#snapshot ??= frozen<TurnSnapshot>({
      id: this.id,
      conversationId: state.conversationId ?? this.#origin.conversationId,
      messageId: state.messageId ?? this.#origin.messageId,
      status: this.#status,
      text: turnText(state),
      actions: state.actions,
      lastSeq: state.lastSeq,
      error: this.#error,
      endError: state.end?.error,
      connection: this.#connection,
      recovered: this.#recovered,
      stall: this.#stall,
    }));
  };

  /** Calls `listener` (batched) after changes; returns unsubscribe. */
  readonly subscribe = (listener: () => void): (() => void) => this.#listeners.subscribe(listener);

  /** Events applied from now on, each seq once (even through a rebuild), until the turn ends or is closed. */
  async *[Symbol.asyncIterator](): AsyncGenerator<TurnEvent, void> {
    const items: (TurnEvent | undefined)[] = [];
    let wake: (value?: unknown) => void = () => {};
    const queue: EventQueue = (event) => wake(items.push(event));
    if (this.#done || !this.#wanted) return;
    this.#queues.add(queue);
    try {
      for (let lastSeq = 0; ; ) {
        if (!items.length) await new Promise((resolve) => (wake = resolve));
        const event = items.shift();
        if (!event) return;
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        yield event;
      }
    } finally {
      this.#queues.delete(queue);
    }
  }

  /** Asks the server to cancel the turn; the end arrives as `turn.end` status `cancelled`. */
  async cancel(): Promise<void> {
    const answer = await requestJson({ ...this.#deps, headers: await this.#deps.headers() }, 'POST', this.#path + '/cancel', cancelAnswerSchema, 65_536, 'cancel');
    if (!answer.ok) throw answer.failure.error;
  }

  /** Stops following (storage keeps what arrived); `client.turn(id)` follows again. */
  close(): void {
    this.#wanted = false;
    this.#release();
    if (!this.#following) return;
    this.#following = false;
    this.#stop();
    if (!this.#done) this.#setConnection('idle');
  }

  // ------------------------------------------------------------------ what the client calls

  /** True once ended or failed. */
  get done(): boolean {
    return this.#done;
  }

  /** Failed for a reason that may pass (auth, network): {@link revive} may follow it again. */
  get revivable(): boolean {
    return this.#revivable;
  }

  get lastSeq(): number {
    return this.#state.lastSeq;
  }

  /** Epoch ms the client first knew the turn (stored, or when followed). */
  get createdAt(): number {
    return this.#createdAt;
  }

  /** Records what is known before the events (acceptance); writes the row at once. */
  setOrigin(origin: TurnOrigin): void {
    this.#origin = { ...this.#origin, ...origin };
    this.#changed();
    this.#deps.persistence.saveTurn(this.id);
  }

  /** Restores what storage holds (before any network). */
  restore({ record, events }: LoadedTurn): void {
    this.#origin = record;
    this.#createdAt = record.createdAt;
    if (record.text !== undefined) {
      // A folded turn: ended, its events are gone.
      this.#state = foldedTurnState(this.id, { ...record, text: record.text, actions: record.actions ?? [] });
      this.#error = record.error && errorFromJson(record.error);
      return this.#end(record.status);
    }
    for (const event of events) this.#state = applyEvent(this.#state, event, this.#deps.reducerLimits);
    this.#status = this.#live();
    // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
    if (this.#state.lastSeq) this.#markRecovered('reload', this.#state.lastSeq);
    this.#changed();
  }

  /**
   * Starts (or resumes) following, unless the app closed the handle. `replayFirst` asks
   * the log before streaming (adopted turns); the promise then resolves once that replay
   * is over (or the turn settled), else at once.
   */
  start(replayFirst = false): Promise<void> {
    if (!this.#wanted) return RESOLVED;
    this.#following = true;
    if (this.#done) return RESOLVED;
    const over = replayFirst ? this.#replayOver() : RESOLVED;
    void this.#run();
    return over;
  }

  /** The app asked for the turn again after closing it. */
  reopen(): void {
    this.#wanted = true;
    if (!this.#following) void this.start();
  }

  /** A turn that failed for a reason that may pass (auth, network) is followed again, through replay. */
  revive(): Promise<void> {
    if (!this.#revivable) return RESOLVED;
    this.#done = this.#revivable = this.#authRetried = false;
    this.#error = undefined;
    this.#status = this.#live();
    return this.start(true);
  }

  /**
   * Replays the log next to whatever the main loop does (`recover()`): both paths merge
   * by seq. No-op while the main loop replays itself. A failure hands the replay to the
   * main loop (backoff, Retry-After, a visible give-up); resolves once that is over.
   */
  async replayAlongside(): Promise<void> {
    if (this.#done || !this.#following || this.#replay || this.#alongside) return;
    const controller = (this.#alongside = new AbortController());
    this.#replayed = 0;
    let more: Failure | boolean = true;
    while (more === true) more = await this.#page(controller.signal).catch(networkFailure);
    if (this.#alongside === controller) this.#alongside = undefined;
    if (more === false) {
      if (this.#replayed) this.#markRecovered('replay', this.#replayed);
    } else if (!controller.signal.aborted && this.#following && !this.#done) await this.#replayOver();
  }

  /** The browser went online or offline: online retries at once. */
  onNetwork(online: boolean): void {
    if (online) this.#wake?.();
  }

  /** Ends every connection and timer for good (the client refuses any later use). */
  dispose(): void {
    this.close();
    this.#batcher.cancel();
  }

  // ------------------------------------------------------------------ the main loop

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      // fetch-event-source 2.0.1 calls `window` and `document` (FAULTS.md); without them its promise never settles.
      if (typeof document === 'undefined') throw new LifelineError('invalid_argument', 'Following a turn needs a browser.');
      while (this.#following && !this.#done) {
        if (this.#state.phase === 'ended') await this.#settle();
        else if (!this.#deps.network.online()) {
          // Woken by the `online` event, close or dispose.
          this.#setConnection('offline');
          await this.#sleep();
        } else await (this.#replay ? this.#replayStep() : this.#stream()).catch((cause: unknown) => this.#handle(networkFailure(cause)));
      }
    } catch (error) {
      // A bug, not a network condition: fail visibly rather than spin.
      this.#fail(asLifelineError(error), 'stream');
    } finally {
      this.#running = false;
    }
  }

  /** One stream attempt: exactly one fetchEventSource call, its own retry disabled. */
  async #stream(): Promise<void> {
    const deps = this.#deps;
    const controller = (this.#abort = new AbortController());
    const { signal } = controller;
    this.#applied = 0;
    // Headers compare case-insensitively: the app's own accept and last-event-id give way to ours.
    const headers = new Headers(await deps.headers());
    if (signal.aborted) return;
    headers.set('accept', 'text/event-stream');
    // Our own cursor: the last seq applied here, never an `id:` the wire sent.
    const lastEventId = this.#state.lastSeq;
    if (lastEventId) headers.set('last-event-id', String(lastEventId));
    else headers.delete('last-event-id');
    const url = endpoint(deps.baseUrl, this.#path + '/events');
    let outcome: Failure | undefined;
    let closed = false;
    this.#say('connect', { attempt: this.#backoff.attempt, lastEventId });
    this.#setConnection('connecting');
    this.#arm();
    await fetchEventSource(url, {
      signal,
      openWhenHidden: true,
      // The library's header copy (with the wire's last-event-id) is never sent; the body is capped.
      fetch: async (_, init) => limitBody(await deps.fetch(url, { ...init, headers }), deps.streamLimits),
      onopen: async (response) => {
        const { status } = response;
        if (status === 200 && /^text\/event-stream/i.test(String(response.headers.get('content-type')))) {
          this.#authRetried = false;
          this.#say('open', { status });
          if (lastEventId) this.#say('resumed', { fromSeq: lastEventId });
          this.#setConnection('open');
          if (this.#status === 'reconnecting') this.#setStatus(this.#live());
          return;
        }
        // 204: the turn ended and the stream has nothing after our cursor; the log has the rest.
        if (status === 204) this.#requestReplay();
        else if (status === 200) outcome = { error: new TransportError('unexpected_content_type', 'Not an event stream.', { status }), disposition: 'retry' };
        else outcome = await failureFromResponse(response, deps.now());
        throw STOP;
      },
      onmessage: (message) => {
        // Aborted mid-chunk (turn.end, a gap): the rest of the chunk is not ours to apply.
        if (signal.aborted) return;
        this.#heard = deps.now();
        this.#heardAny = true;
        if (message.retry) this.#hint.baseDelayMs = message.retry;
        // Heartbeats, comments, empty blocks and `event:` without data carry nothing.
        if (message.event === 'heartbeat' || !message.data) return;
        // An invalid message: the stream is not trustworthy any more; drop it, come back through backoff.
        if ((outcome = this.#take(decodeEvent(message.data, deps), true) || undefined)) throw STOP;
      },
      onclose: () => {
        closed = true;
        outcome = { error: new TransportError('network_error', 'The stream closed before turn.end.'), disposition: 'retry' };
        throw STOP;
      },
      onerror: (error) => {
        outcome ??= error instanceof ProtocolError ? { error, disposition: 'retry' } : networkFailure(error);
        throw STOP;
      },
    }).catch(() => {});
    clearTimeout(this.#watchdog);
    // Aborted by us (stall, gap, turn.end, replay, close): whoever aborted says what comes next.
    if (signal.aborted || !outcome) return;
    this.#cut = true;
    this.#say('disconnect', { cause: outcome.error });
    // Closed without turn.end more than once in a row, or failing again and again: ask the log.
    await this.#handle(outcome, closed ? 2 : deps.replayAfterFailures);
  }

  /** One replay page of the main loop; the replay ends once the log is exhausted or holds turn.end. */
  async #replayStep(): Promise<void> {
    const controller = (this.#abort = new AbortController());
    this.#arm();
    const result = await this.#page(controller.signal);
    clearTimeout(this.#watchdog);
    if (typeof result !== 'boolean') {
      if (!controller.signal.aborted) await this.#handle(result);
      return;
    }
    this.#setStatus('recovering');
    if (result) return;
    if (this.#replayed) this.#markRecovered('replay', this.#replayed);
    this.#replay = false;
    // An ended turn is released once settled, so `recover()` answers final snapshots.
    if (this.#state.phase === 'ended') return;
    this.#misses = 0;
    this.#setStatus(this.#live());
    this.#setConnection('idle');
    this.#release();
  }

  /**
   * Fetches and applies one page of the log after the last applied seq; answers whether
   * more pages follow, or the failure. A page too large to read is asked again, halved.
   */
  async #page(signal: AbortSignal): Promise<Failure | boolean> {
    const deps = this.#deps;
    for (let limit = deps.replayLimit; ; limit = Math.ceil(limit / 2)) {
      const after = this.#state.lastSeq;
      const answer = await requestJson({ ...deps, headers: await deps.headers(), signal }, 'GET', `${this.#path}?after=${after}&limit=${limit}`, replayAnswerSchema, deps.replayMaxBytes, 'replay');
      if (answer.ok) {
        this.#authRetried = false;
        const { turn, events, hasMore } = answer.value;
        for (const value of events) {
          const failure = this.#take(decodeEventValue(value), false);
          if (failure) return failure;
        }
        if (this.#state.phase === 'ended') return false;
        // The turn row is read after the events: it may count events this page lacks. An empty page ends the replay (no hot loop).
        const more = events.length > 0 && (hasMore || turn.lastSeq > this.#state.lastSeq);
        // Ended, but no turn.end after our cursor: nothing will fix that.
        if (!more && turn.status !== 'pending' && turn.status !== 'streaming') return { error: new ProtocolError('seq_mismatch', 'The log ends without turn.end.'), disposition: 'fatal' };
        return more;
      }
      if (!answer.tooLarge) return answer.failure;
      if (limit < 2) return { error: answer.failure.error, disposition: 'fatal' };
    }
  }

  /** What a failure leads to: a backoff wait, a replay, a header refresh, a rebuild, or the end. */
  async #handle(failure: Failure, replayAfter = Infinity): Promise<void> {
    const { error, disposition } = failure;
    const scope = this.#replay ? 'replay' : 'stream';
    if (error.kind === 'protocol') this.#say('protocol-error', { error });
    if (disposition === 'retry') {
      this.#misses = this.#applied ? 0 : this.#misses + 1;
      if (this.#misses >= replayAfter) return this.#requestReplay();
      const delay = this.#backoff.next({ ...this.#hint, ...failure, afterHealthy: this.#applied > 0 });
      if (delay === undefined) return this.#fail(new TransportError('retry_exhausted', 'Gave up after retry.maxElapsedMs.', { cause: error }), scope);
      if (this.#status !== 'stalled' && this.#status !== 'recovering') this.#setStatus('reconnecting');
      const at = this.#deps.now();
      this.#deps.emit({ type: 'retry', at, scope, id: this.id, attempt: this.#backoff.attempt, delayMs: delay, cause: error });
      this.#setConnection('waiting', at + delay);
      return this.#sleep(delay);
    }
    // 401/403: the next request re-reads the headers (a refreshed token); a second one in a row is final.
    if (disposition === 'auth' && !this.#authRetried) {
      this.#authRetried = true;
      this.#say('auth-refresh', {});
    }
    // The server's log is behind our cursor (resume_point_ahead): start again from seq 0.
    else if (disposition === 'rebuild') this.#rebuild();
    else this.#fail(error, scope);
  }

  // ------------------------------------------------------------------ replay

  /** Aborts the stream and replays next: one path for stalls, gaps, 204, repeated failures, rebuilds and adoption. */
  #requestReplay(): void {
    if (!this.#replay) {
      this.#replay = true;
      this.#replayed = this.#applied = 0;
      // What follows a replay is not a resumed burst.
      this.#cut = false;
      this.#say('recovering', { path: 'replay', fromSeq: this.#state.lastSeq });
      if (this.#status !== 'stalled') this.#setStatus('recovering');
      this.#setConnection('idle');
    }
    this.#alongside?.abort();
    this.#abort?.abort();
    this.#wake?.();
  }

  /** Resolves when the main loop's replay (requested now) is over, or the turn settled. */
  #replayOver(): Promise<void> {
    const over = new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#requestReplay();
    return over;
  }

  #release(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  /** Throws the local copy away and replays the whole log. */
  #rebuild(): void {
    this.#state = initialTurnState(this.id);
    this.#deps.persistence.discard(this.id);
    this.#changed();
    this.#requestReplay();
  }

  // ------------------------------------------------------------------ applying events

  /**
   * Applies or drops one decoded event. Answers why the path that brought it must stop:
   * a bad stream is dropped and retried, a bad log is final.
   */
  #take(decoded: DecodeResult, stream: boolean): Failure | void {
    const disposition = stream ? 'retry' : 'fatal';
    if (decoded.kind === 'error') return { error: decoded.error, disposition };
    if (decoded.kind === 'unknown') {
      this.#say('unknown-event', { eventType: decoded.type });
      // Skipped, but its seq is consumed: otherwise the next event would look like a gap forever.
      this.#state = skipEvent(this.#state, decoded.seq ?? 0);
      return this.#changed();
    }
    const { event } = decoded;
    const verdict = classifyEvent(this.#state, event, this.#deps.reducerLimits);
    if (verdict === 'next') return this.#apply(event, stream);
    if (verdict === 'duplicate') return this.#say('duplicate', { seq: event.seq });
    if (verdict === 'gap') {
      this.#say('gap', { expected: this.#state.lastSeq + 1, got: event.seq });
      // Filled from the log before anything later applies.
      if (stream) return this.#requestReplay();
    }
    // A gap in the log itself, an event of another turn or after turn.end, or a text over its cap.
    return verdict === 'too-large'
      ? { error: new ProtocolError('turn_too_large', 'The text passed maxTurnTextLength.'), disposition: 'fatal' }
      : { error: new ProtocolError('seq_mismatch', `Event ${event.seq} out of place (${verdict}).`), disposition };
  }

  /** Hot path: `event` was classified `next`. */
  #apply(event: TurnEvent, stream: boolean): void {
    this.#state = applyNext(this.#state, event);
    this.#deps.persistence.append(this.id, event);
    for (const queue of this.#queues) queue(event);
    this.#backoff.reset();
    if (stream) {
      // A resumed connection first delivers, in one chunk, what was logged while we were away: `resume` recovered that burst.
      if (++this.#applied === 1 && this.#cut && event.seq > 1) {
        this.#cut = false;
        queueMicrotask(() => this.#markRecovered('resume', this.#applied));
      }
      this.#setStatus('streaming');
    } else this.#replayed++;
    if (this.#connection.attempt) this.#setConnection(this.#connection.state);
    if (event.type === 'turn.end') {
      // The loop settles it: verify, then complete.
      this.#abort?.abort();
      this.#wake?.();
    }
    this.#changed();
  }

  /** Verifies the ended turn's text (length, then SHA-256); completes it, or rebuilds once from a full replay. */
  async #settle(): Promise<void> {
    const end = this.#state.end!;
    const text = turnText(this.#state);
    const matches =
      text.length === end.textLength &&
      (await sha256Hex(text).then(
        (hash) => hash === end.textSha256,
        () => {
          // No Web Crypto outside secure contexts (plain HTTP): the length matched, the hash is unknown.
          this.#say('integrity-unchecked', {});
          return true;
        },
      ));
    if (!this.#following || this.#done) return;
    if (matches) {
      this.#fold(end.status);
      this.#say('completed', { status: end.status });
      return this.#end(end.status);
    }
    this.#say('integrity-mismatch', { expectedLength: end.textLength, actualLength: text.length });
    if (this.#rebuilt) return this.#fail(new ProtocolError('integrity_mismatch', 'The text differs from turn.end after a full replay.'), 'replay');
    this.#rebuilt = true;
    this.#rebuild();
  }

  #fail(error: LifelineError, scope: 'stream' | 'replay'): void {
    if (this.#done) return;
    // Bad data and a turn the server no longer has stay failed; auth and network trouble may pass.
    const final = error.kind === 'protocol' || error.status === 404 || error.status === 410;
    this.#error = error;
    this.#revivable = !final;
    this.#deps.emit({ type: 'failed', at: this.#deps.now(), scope, id: this.id, error });
    if (final) this.#fold('failed', error);
    this.#end('failed');
  }

  /** Stores the ended turn as one row with its text (its events are dropped). */
  #fold(status: TurnStatus, error?: LifelineError): void {
    const state = this.#state;
    void this.#deps.persistence.end(this.id, { status, text: turnText(state), actions: state.actions, lastSeq: state.lastSeq, ...(error && { error }) });
  }

  #end(status: TurnStatus): void {
    this.#done = true;
    this.#setStatus(status);
    this.#stop();
    this.#setConnection('closed');
    this.#release();
    this.#resolve(this.getSnapshot());
  }

  #markRecovered(path: RecoveryPath, events: number): void {
    this.#recovered = { path, events, at: this.#deps.now() };
    this.#say('recovered', { path, events });
    this.#changed();
  }

  // ------------------------------------------------------------------ watchdog

  /** Watches the request just made for silence (a stalled stream, or a replay request that hangs). */
  #arm(): void {
    this.#heard = this.#deps.now();
    this.#check();
  }

  /**
   * Timer-driven: events only stamp `#heard` (cheap on the hot path) and the timer waits
   * out the rest of the window. Silence past it (`firstEventMs` until the turn first said
   * anything, then `idleMs`) stalls the turn: replay, whatever was in flight.
   */
  readonly #check = (): void => {
    const silentMs = this.#deps.now() - this.#heard;
    const watchdog = this.#heardAny || this.#state.lastSeq ? 'idle' : 'first-event';
    const limit = watchdog === 'idle' ? this.#deps.idleMs : this.#deps.firstEventMs;
    if (silentMs < limit) {
      this.#watchdog = setTimeout(this.#check, limit - silentMs);
      return;
    }
    this.#stall = { at: this.#deps.now(), watchdog };
    this.#setStatus('stalled');
    this.#say('stalled', { watchdog, silentMs });
    this.#requestReplay();
  };

  // ------------------------------------------------------------------ plumbing

  #live(): TurnStatus {
    return this.#state.phase === 'pending' ? 'pending' : 'streaming';
  }

  /** Waits `ms` (until woken, when absent) or until `#wake`. */
  #sleep(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  #stop(): void {
    this.#abort?.abort();
    this.#alongside?.abort();
    clearTimeout(this.#watchdog);
    this.#wake?.();
    for (const queue of this.#queues) queue();
  }

  #setStatus(status: TurnStatus): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#changed();
  }

  #setConnection(state: ConnectionState, nextRetryAt?: number): void {
    const current = this.#connection;
    const attempt = this.#backoff.attempt;
    if (current.state === state && current.attempt === attempt && current.nextRetryAt === nextRetryAt) return;
    this.#connection = frozen<ConnectionInfo>({ state, attempt, nextRetryAt });
    this.#changed();
  }

  #changed(): void {
    this.#snapshot = undefined;
    this.#batcher.request();
  }

  /** Emits a diagnostic about this turn. */
  #say<T extends DiagnosticType>(type: T, fields: Fields<T>): void {
    this.#deps.emit({ type, at: this.#deps.now(), turnId: this.id, ...fields } as Diagnostic);
  }

  /** The row persistence writes; none until the conversation is known (turn.start or acceptance). */
  #meta(): TurnMeta | undefined {
    const conversationId = this.#state.conversationId ?? this.#origin.conversationId;
    return conversationId === undefined
      ? undefined
      : frozen<TurnMeta>({
          conversationId,
          messageId: this.#state.messageId ?? this.#origin.messageId,
          operationId: this.#origin.operationId,
          status: this.#status,
          createdAt: this.#createdAt,
        });
  }
}
