/**
 * Follows one turn: one main loop (a stream attempt, a replay page or a wait at a time),
 * the stall watchdog, the integrity check at `turn.end`, and the external store the UI
 * reads. One instance per turn id per client.
 *
 * Every event, whatever brought it (stream, replay, a replay racing the stream, storage),
 * goes through `take` and the pure reducer, so each seq is applied exactly once, in order.
 */
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { createBackoff, type RetryPolicy } from './core/backoff.js';
import { createBatcher, createEmitter } from './core/subscribable.js';
import { applyEvent, applyNext, classifyEvent, foldedTurnState, initialTurnState, skipEvent, turnText } from './core/turn-reducer.js';
import { asLifelineError, errorFromJson, LifelineError, ProtocolError, TransportError } from './errors.js';
import { decodeEvent, decodeEventValue, DEFAULT_MAX_EVENT_SIZE, type DecodeResult } from './protocol/decode.js';
import { sha256Hex } from './protocol/integrity.js';
import { cancelAnswerSchema, replayAnswerSchema, type TurnEvent } from './protocol/schemas.js';
import type { Persistence, TurnMeta } from './storage/persistence.js';
import type { LoadedTurn, TurnStatus } from './storage/store.js';
import { isEndedStatus } from './storage/records.js';
import { endpoint, failureFromResponse, networkFailure, requestJson, type Failure, type FailureDisposition } from './transport/http.js';
import type { NetworkMonitor } from './transport/network.js';
import { limitBody, streamLimitsFor } from './transport/sse-connection.js';
import type { ConnectionInfo, ConnectionState, Diagnostic, DiagnosticType, EndedTurnSnapshot, LimitOptions, RecoveryInfo, RecoveryPath, StallInfo, StallOptions, Turn, TurnSnapshot } from './types.js';

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

/** A followed turn: the `Turn` handle the app holds, plus what the client calls on it. */
export interface TurnFollower extends Turn {
  /** True once ended or failed. */
  readonly done: boolean;
  readonly lastSeq: number;
  /** Epoch ms the client first knew the turn (stored, or when followed). */
  readonly createdAt: number;
  /** Records what is known before the events (acceptance); writes the row at once. */
  setOrigin(origin: TurnOrigin): void;
  /** Restores what storage holds (before any network). */
  restore(loaded: LoadedTurn): void;
  /**
   * Starts (or resumes) following, unless the app closed the handle. `replayFirst` asks
   * the log before streaming (adopted turns); the promise then resolves once that replay
   * is over (or the turn settled), else at once.
   */
  start(replayFirst?: boolean): Promise<void>;
  /** The app asked for the turn again after closing it. */
  reopen(): void;
  /** A turn that failed for a reason that may pass is followed again, through replay. */
  revive(): Promise<void>;
  /**
   * Replays the log next to whatever the main loop does (`recover()`): both paths merge
   * by seq. No-op while the main loop replays itself. A failure hands the replay to the
   * main loop (backoff, Retry-After, a visible give-up); resolves once that is over.
   */
  replayAlongside(): Promise<void>;
  /** The browser went online or offline: online retries at once. */
  onNetwork(online: boolean): void;
  /** The page came back from a freeze (`resume`): an open stream may have gone deaf. */
  onResume(): void;
  /** Ends every connection and timer for good (the client refuses any later use). */
  dispose(): void;
}

/** The fields of a turn's diagnostic of type `T` besides `type`, `at` and `turnId`. */
type Fields<T extends DiagnosticType> = Omit<Extract<Diagnostic, { type: T }>, 'type' | 'at' | 'turnId'>;

/** Thrown out of fetch-event-source's callbacks to end an attempt without its own retry. */
const STOP = 0;
const RESOLVED = Promise.resolve();
/** Events per replay page. */
const REPLAY_LIMIT = 1000;
/** Failed stream attempts in a row (no events between) after which the turn is replayed. */
const REPLAY_AFTER_FAILURES = 3;

/** A failure the loop handles: retried (the default), or `fatal` and the like. */
const failure = (error: LifelineError, disposition: FailureDisposition = 'retry'): Failure => ({ error, disposition });

/** `value` frozen, without its undefined members (optional fields are absent, never undefined). */
function frozen<T>(value: { [K in keyof T]: T[K] | undefined }): T {
  for (const key in value) if (value[key] === undefined) delete value[key];
  return Object.freeze(value) as T;
}

/**
 * Creates the follower of turn `id`; nothing runs before `start`. The state lives in
 * closures (they minify far smaller than `#private` fields).
 */
export function follow(id: string, deps: FollowerDeps): TurnFollower {
  const { now, persistence, limits, stall: stallOptions } = deps;
  const maxEventSize = limits.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE;
  const streamLimits = streamLimitsFor(maxEventSize);
  /** Ids match the protocol's id pattern: they need no escaping. */
  const path = '/turns/' + id;
  const listeners = createEmitter<void>();
  const batcher = createBatcher(() => {
    listeners.emit();
    deps.onChange();
  }, deps.schedule);
  /** Each feeds one `for await`; called without an event when it ends. */
  const queues = new Set<(event?: TurnEvent) => void>();
  /** One backoff for stream and replay retries, reset by every applied event (progress). */
  const backoff = createBackoff(deps.retry, deps);
  let resolveCompleted!: (snapshot: EndedTurnSnapshot) => void;
  const completed = new Promise<EndedTurnSnapshot>((resolve) => (resolveCompleted = resolve));

  let state = initialTurnState(id);
  let status: TurnStatus = 'pending';
  let error: LifelineError | undefined;
  let connection: ConnectionInfo = Object.freeze({ state: 'idle', attempt: 0 });
  let recovered: RecoveryInfo | undefined;
  let stall: StallInfo | undefined;
  let snapshot: TurnSnapshot | undefined;
  let origin: TurnOrigin = {};
  let createdAt = now();

  let running = false;
  /** The app has not closed the handle (turns restored or adopted are wanted too). */
  let wanted = true;
  /** Between start and close. */
  let following = false;
  /** Ended (and verified) or failed: nothing changes any more. */
  let done = false;
  let revivable = false;
  /** The integrity check already rebuilt the turn once. */
  let rebuilt = false;
  /** The main loop replays (stall, gap, 204, repeated failures or closes, rebuild, adoption) instead of streaming. */
  let replay = false;
  /** Events the replay under way (the main loop's or alongside) applied. */
  let replayed = 0;
  /** The main loop's request in flight. */
  let abort: AbortController | undefined;
  let alongside: AbortController | undefined;
  /** Ends the main loop's current wait. */
  let wake: (() => void) | undefined;
  /** Resolved when the main loop's replay is over or the turn settled. */
  const waiters: (() => void)[] = [];
  /** Stream attempts in a row that applied nothing. */
  let misses = 0;
  let authRetried = false;
  /** A stream attempt ended by a cut: the next connection's first burst is what `resume` recovered. */
  let cut = false;
  /** Events the current stream connection applied. */
  let applied = 0;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  /** When the request in flight (or the relay) last heard anything (an event or a heartbeat). */
  let heard = 0;
  /** The tabs' channel for this turn, while following where Web Locks and BroadcastChannel exist. */
  let channel: BroadcastChannel | undefined;
  /** Lets the turn's lock go. */
  let leave: ((value?: unknown) => void) | undefined;
  /** This tab streams: it holds the lock (or streams alone: the lock manager refused). */
  let leading = false;
  /** A relayed batch arrived since joining (the `watcher` diagnostic was said). */
  let relayed = false;
  /** Another tab follows this turn: only then is relaying (a structured clone per event) worth it. */
  let watched = false;
  /** Stream messages accepted in this task, relayed together once applied. */
  let outgoing: string[] | undefined;

  const changed = (): void => {
    snapshot = undefined;
    batcher.request();
  };
  const setStatus = (next: TurnStatus): void => {
    if (status !== next) {
      status = next;
      changed();
    }
  };
  const live = (): TurnStatus => (state.phase === 'pending' ? 'pending' : 'streaming');
  const ended = (): boolean => state.phase === 'ended';
  const setConnection = (next: ConnectionState, nextRetryAt?: number): void => {
    const attempt = backoff.attempt;
    if (connection.state === next && connection.attempt === attempt && connection.nextRetryAt === nextRetryAt) return;
    connection = frozen<ConnectionInfo>({ state: next, attempt, nextRetryAt });
    changed();
  };
  /** Emits a diagnostic about this turn. */
  const say = <T extends DiagnosticType>(type: T, fields?: Fields<T>): void => deps.emit({ type, at: now(), turnId: id, ...fields } as Diagnostic);
  const release = (): void => {
    for (const resolve of waiters.splice(0)) resolve();
  };
  const getSnapshot = (): TurnSnapshot =>
    (snapshot ??= frozen<TurnSnapshot>({
      id,
      conversationId: state.conversationId ?? origin.conversationId,
      messageId: state.messageId ?? origin.messageId,
      status,
      text: turnText(state),
      actions: state.actions,
      lastSeq: state.lastSeq,
      error,
      endError: state.end?.error,
      connection,
      recovered,
      stall,
    }));

  // ------------------------------------------------------------------ the main loop

  async function run(): Promise<void> {
    if (running) return;
    running = true;
    try {
      // fetch-event-source 2.0.1 calls `window` and `document` (FAULTS.md); without them its promise never settles.
      if (typeof document === 'undefined') throw new LifelineError('invalid_argument', 'Following needs a browser.');
      join();
      while (following && !done) {
        if (ended()) await settle();
        else if (!deps.network.online()) {
          // Woken by the `online` event, close or dispose.
          setConnection('offline');
          await sleep();
        } else if (channel && !leading && !replay) {
          // Another tab streams: apply what it relays, under the stall watchdog (silence replays).
          // Woken by the lock, a replay or close.
          arm();
          await sleep();
          clearTimeout(watchdog);
        } else {
          // A headers function that throws (a failed token refresh) is retried like a network error.
          await (replay ? replayStep() : stream()).catch((cause: unknown) => handle(networkFailure(cause)));
        }
      }
    } catch (bug) {
      // A bug, not a network condition: fail visibly rather than spin.
      fail(asLifelineError(bug), 'stream');
    } finally {
      running = false;
      // Lets the lock go: a waiting tab streams from its own cursor.
      leave?.();
      channel?.close();
      channel = undefined;
    }
  }

  /**
   * One network stream per turn across the tabs of an origin (FAULTS row 25): the tab
   * holding the turn's Web Lock streams and relays what it applied on a BroadcastChannel;
   * the others apply it like their own stream. The browser hands the lock on when the
   * holder closes; `leave` lets it go when this tab stops following. Without Web Locks or
   * BroadcastChannel every tab streams alone. The channel is same-origin: what it brings
   * is decoded and checked as a stream is, no more.
   */
  function join(): void {
    // happy-dom and some embedded browsers expose `navigator.locks` as null.
    const locks = globalThis.navigator?.locks;
    if (!locks || !globalThis.BroadcastChannel) return;
    const name = `lifeline-turn:${deps.namespace}:${id}`;
    const tabs = (channel = new BroadcastChannel(name));
    leading = relayed = false;
    // Messages: 0 = "I follow this turn", 1 = "so do I" (the answer), [lastSeq, data[]] = a relayed batch.
    tabs.onmessage = ({ data }) => {
      if (typeof data == 'number') {
        watched = true;
        if (!data) tabs.postMessage(1);
        // A leader ignores a late batch of a previous leader: its own stream is the one to trust now.
      } else if (!leading && Array.isArray(data)) {
        const [lastSeq, batch] = data as [number, string[]];
        // Same-origin, but still input: a malformed post is reported, never thrown.
        if (typeof lastSeq != 'number' || !Array.isArray(batch)) return say('protocol-error', { error: new ProtocolError('invalid_event', 'Invalid relayed batch.') });
        if (!relayed) say('shared', { role: 'watcher' }), (relayed = true);
        // A replay request of this tab's own is watched on its own: relayed sound must not hide it hanging.
        if (!replay) heard = now();
        for (const text of batch) {
          // During a replay relayed events only merge into it, by seq: it fills any hole.
          const failed = take(decodeEvent(text, limits, id), !replay);
          if (failed) {
            if (!replay) say('protocol-error', { error: failed.error }), requestReplay();
            return;
          }
        }
        // Behind the leader (joined late, or it applied events by replay): heartbeats alone would hide it.
        if (lastSeq > state.lastSeq && !replay) {
          say('gap', { expected: state.lastSeq + 1, got: lastSeq });
          requestReplay();
        }
      }
    };
    tabs.postMessage(0);
    locks
      .request(name, () => {
        // Granted after this tab stopped following (its request stayed queued): handed on at once.
        if (channel !== tabs) return;
        say('shared', { role: 'leader' });
        leading = true;
        wake?.();
        return new Promise((resolve) => (leave = resolve));
      })
      // The lock manager refused (a sandboxed frame): stream alone.
      .catch(() => {
        leading = true;
        wake?.();
      });
  }

  /** One stream attempt: exactly one fetchEventSource call, its own retry disabled. */
  async function stream(): Promise<void> {
    const controller = (abort = new AbortController());
    const { signal } = controller;
    applied = 0;
    // Headers compare case-insensitively: the app's own accept and last-event-id give way to ours.
    const headers = new Headers(await deps.headers());
    if (signal.aborted) return;
    headers.set('accept', 'text/event-stream');
    // Our own cursor: the last seq applied here, never an `id:` the wire sent.
    const lastEventId = state.lastSeq;
    if (lastEventId) headers.set('last-event-id', String(lastEventId));
    else headers.delete('last-event-id');
    const url = endpoint(deps.baseUrl, path + '/events');
    let outcome = undefined as Failure | undefined;
    let closed = false;
    say('connect', { attempt: backoff.attempt, lastEventId });
    setConnection('connecting');
    arm();
    await fetchEventSource(url, {
      signal,
      openWhenHidden: true,
      // The library's header copy (with the wire's last-event-id) is never sent; the body is capped.
      fetch: async (_, init) => limitBody(await deps.fetch(url, { ...init, headers }), streamLimits),
      onopen: async (response) => {
        const code = response.status;
        if (code === 200 && /^text\/event-stream/i.test(String(response.headers.get('content-type')))) {
          authRetried = false;
          say('open', { status: code });
          if (lastEventId) say('resumed', { fromSeq: lastEventId });
          setConnection('open');
          // No replay runs during a stream attempt: reconnecting (or pending) becomes what the log says.
          setStatus(live());
          return;
        }
        // 204: the turn ended and the stream has nothing after our cursor; the log has the rest.
        if (code === 204) requestReplay();
        else if (code === 200) outcome = failure(new TransportError('unexpected_content_type', 'Not an event stream.', { status: code }));
        else outcome = await failureFromResponse(response, now());
        throw STOP;
      },
      onmessage: (message) => {
        // Aborted mid-chunk (turn.end, a gap): the rest of the chunk is not ours to apply.
        if (signal.aborted) return;
        heard = now();
        // Heartbeats, comments, empty blocks and `event:` without data carry nothing. An invalid
        // message makes the stream untrustworthy: it is dropped and retried through backoff.
        const data = message.event !== 'heartbeat' && message.data;
        if (data && (outcome = take(decodeEvent(data, limits, id), true) || undefined)) throw STOP;
        // Relayed to watching tabs, heartbeats too (they keep the watchdogs there quiet): one
        // batch per chunk, posted once applied here, with the cursor it led to.
        if (watched) {
          outgoing ??= (queueMicrotask(() => {
            channel?.postMessage([state.lastSeq, outgoing]);
            outgoing = undefined;
          }), []);
          if (data) outgoing.push(data);
        }
      },
      onclose: () => {
        closed = true;
        outcome = failure(new TransportError('network_error', 'Closed before turn.end.'));
        throw STOP;
      },
      onerror: (cause) => {
        outcome ||= cause instanceof ProtocolError ? failure(cause) : networkFailure(cause);
        throw STOP;
      },
    }).catch(() => {});
    clearTimeout(watchdog);
    // Aborted by us (stall, gap, turn.end, replay, close): whoever aborted says what comes next.
    if (signal.aborted || !outcome) return;
    cut = true;
    say('disconnect', { cause: outcome.error });
    // Closed without turn.end more than once in a row, or failing again and again: ask the log.
    await handle(outcome, closed ? 2 : REPLAY_AFTER_FAILURES);
  }

  /** One replay page of the main loop; the replay ends once the log is exhausted or holds turn.end. */
  async function replayStep(): Promise<void> {
    const controller = (abort = new AbortController());
    arm();
    const result = await page(controller.signal).catch(networkFailure);
    clearTimeout(watchdog);
    if (typeof result !== 'boolean') {
      if (!controller.signal.aborted) await handle(result);
      return;
    }
    setStatus('recovering');
    if (result) return;
    if (replayed) markRecovered('replay', replayed);
    replay = false;
    // An ended turn is released once settled, so `recover()` answers final snapshots.
    if (ended()) return;
    setStatus(live());
    setConnection('idle');
    release();
  }

  /**
   * Fetches and applies one page of the log after the last applied seq; answers whether
   * more pages follow, or the failure. A page too large to read is asked again, halved.
   */
  async function page(signal: AbortSignal): Promise<Failure | boolean> {
    for (let limit = REPLAY_LIMIT; ; limit = Math.ceil(limit / 2)) {
      // The answer is read up to a cap (bounded memory); past it the page is asked again, halved.
      const answer = await requestJson({ ...deps, signal }, 'GET', `${path}?after=${state.lastSeq}&limit=${limit}`, replayAnswerSchema, Math.max(8 * 1024 * 1024, 4 * maxEventSize));
      if (answer.ok) {
        authRetried = false;
        const { turn, events, hasMore } = answer.value;
        for (const value of events) {
          const stop = take(decodeEventValue(value, id), false);
          if (stop) return stop;
        }
        if (ended()) return false;
        // The turn row is read after the events: it may count events this page lacks.
        const more = hasMore || turn.lastSeq > state.lastSeq;
        // Ended, but no turn.end after our cursor: nothing will fix that.
        if (!more && isEndedStatus(turn.status)) return failure(new ProtocolError('seq_mismatch', 'Log ended without turn.end.'), 'fatal');
        // An empty page ends the replay even when more was promised: the stream brings the rest (no hot loop).
        return more && events.length > 0;
      }
      if (!answer.tooLarge) return answer.failure;
      if (limit < 2) return failure(answer.failure.error, 'fatal');
    }
  }

  /** What a failure leads to: a backoff wait, a replay, a header refresh, a rebuild, or the end. */
  async function handle(failed: Failure, replayAfter = Infinity): Promise<void> {
    const cause = failed.error;
    const scope = replay ? 'replay' : 'stream';
    if (cause.kind === 'protocol') say('protocol-error', { error: cause });
    switch (failed.disposition) {
      case 'retry': {
        misses = applied ? 0 : misses + 1;
        if (misses >= replayAfter) return requestReplay();
        // The server's `retry:` is not used: our own policy paces every retry (no hostile value can storm).
        const delay = backoff.next({ ...failed, afterHealthy: applied > 0 });
        if (delay === undefined) return fail(new TransportError('retry_exhausted', 'retry.maxElapsedMs passed.', { cause }), scope);
        // A replay keeps showing stalled or recovering while it retries.
        if (!replay) setStatus('reconnecting');
        const at = now();
        deps.emit({ type: 'retry', at, scope, id, attempt: backoff.attempt, delayMs: delay, cause });
        setConnection('waiting', at + delay);
        return sleep(delay);
      }
      // 401/403: the next request re-reads the headers (a refreshed token); a second one in a row is final.
      case 'auth':
        if (authRetried) break;
        authRetried = true;
        return say('auth-refresh');
      // The server's log is behind our cursor (resume_point_ahead): start again from seq 0.
      case 'rebuild':
        return rebuild();
    }
    fail(cause, scope);
  }

  // ------------------------------------------------------------------ replay

  /** Aborts the stream and replays next: one path for stalls, gaps, 204, repeated failures, rebuilds and adoption. */
  function requestReplay(): void {
    if (!replay) {
      replay = true;
      replayed = applied = misses = 0;
      // What follows a replay is not a resumed burst.
      cut = false;
      say('recovering', { path: 'replay', fromSeq: state.lastSeq });
      setStatus('recovering');
      setConnection('idle');
    }
    alongside?.abort();
    abort?.abort();
    wake?.();
  }

  /** Resolves when the main loop's replay (requested now) is over, or the turn settled. */
  function replayOver(): Promise<void> {
    const over = new Promise<void>((resolve) => waiters.push(resolve));
    requestReplay();
    return over;
  }

  /** Throws the local copy away and replays the whole log. */
  function rebuild(): void {
    state = initialTurnState(id);
    persistence.discard(id);
    changed();
    requestReplay();
  }

  // ------------------------------------------------------------------ applying events

  /**
   * Applies or drops one decoded event. Answers why the path that brought it must stop:
   * a bad stream is dropped and retried, a bad log is final.
   */
  function take(decoded: DecodeResult, fromStream: boolean): Failure | void {
    const disposition = fromStream ? 'retry' : 'fatal';
    if (decoded.kind === 'error') return failure(decoded.error, disposition);
    if (decoded.kind === 'unknown') {
      say('unknown-event', { eventType: decoded.type });
      // Skipped, but its seq is consumed: otherwise the next event would look like a gap forever.
      state = skipEvent(state, decoded.seq ?? 0);
      return changed();
    }
    const { event } = decoded;
    const verdict = classifyEvent(state, event, limits);
    if (verdict === 'next') return apply(event, fromStream);
    if (verdict === 'duplicate') return say('duplicate', { seq: event.seq });
    if (verdict === 'gap') {
      say('gap', { expected: state.lastSeq + 1, got: event.seq });
      // Filled from the log before anything later applies.
      if (fromStream) return requestReplay();
    }
    // A gap in the log itself, an event of another turn or after turn.end, or a text over its cap.
    return verdict === 'too-large'
      ? failure(new ProtocolError('turn_too_large', 'Text over maxTurnTextLength.'), 'fatal')
      : failure(new ProtocolError('seq_mismatch', `Event ${event.seq} out of place (${verdict}).`), disposition);
  }

  /** Hot path: `event` was classified `next`. */
  function apply(event: TurnEvent, fromStream: boolean): void {
    state = applyNext(state, event);
    persistence.append(id, event);
    for (const queue of queues) queue(event);
    backoff.reset();
    if (fromStream) {
      // A resumed connection first delivers, in one chunk, what was logged while we were away: `resume` recovered that burst.
      if (++applied === 1 && cut && event.seq > 1) {
        cut = false;
        queueMicrotask(() => markRecovered('resume', applied));
      }
      setStatus('streaming');
    } else replayed++;
    if (connection.attempt) setConnection(connection.state);
    if (ended()) {
      // The loop settles it: verify, then complete.
      abort?.abort();
      wake?.();
    }
    changed();
  }

  /** Verifies the ended turn's text (length, then SHA-256); completes it, or rebuilds once from a full replay. */
  async function settle(): Promise<void> {
    const end = state.end!;
    const text = turnText(state);
    const matches =
      text.length === end.textLength &&
      (await sha256Hex(text).then(
        (hash) => hash === end.textSha256,
        () => {
          // No Web Crypto outside secure contexts (plain HTTP): the length matched, the hash is unknown.
          say('integrity-unchecked');
          return true;
        },
      ));
    if (!following || done) return;
    if (matches) {
      fold(end.status);
      say('completed', { status: end.status });
      return finish(end.status);
    }
    say('integrity-mismatch', { expectedLength: end.textLength, actualLength: text.length });
    if (rebuilt) return fail(new ProtocolError('integrity_mismatch', 'Text still differs after a full replay.'), 'replay');
    rebuilt = true;
    rebuild();
  }

  function fail(cause: LifelineError, scope: 'stream' | 'replay'): void {
    if (done) return;
    // Bad data and a turn the server no longer has stay failed; auth and network trouble may pass.
    const final = cause.kind === 'protocol' || [404, 410].includes(cause.status ?? 0);
    error = cause;
    revivable = !final;
    deps.emit({ type: 'failed', at: now(), scope, id, error: cause });
    if (final) fold('failed', cause);
    finish('failed');
  }

  /** Stores the ended turn as one row with its text (its events are dropped). */
  function fold(ending: TurnStatus, cause?: LifelineError): void {
    void persistence.end(id, { status: ending, text: turnText(state), actions: state.actions, lastSeq: state.lastSeq, ...(cause && { error: cause }) });
  }

  function finish(ending: TurnStatus): void {
    // A revived turn starts its replay afresh.
    done = true;
    replay = false;
    setStatus(ending);
    stop();
    setConnection('closed');
    release();
    // Every caller passes an ended status (turn.end's, 'failed', a folded record's).
    resolveCompleted(getSnapshot() as EndedTurnSnapshot);
  }

  function markRecovered(how: RecoveryPath, events: number): void {
    recovered = { path: how, events, at: now() };
    say('recovered', { path: how, events });
    changed();
  }

  // ------------------------------------------------------------------ watchdog

  /** Watches the request just made for silence (a stalled stream, or a replay request that hangs). */
  function arm(): void {
    heard = now();
    check();
  }

  /**
   * Timer-driven: events only stamp `heard` (cheap on the hot path) and the timer waits
   * out the rest of the window. Silence past it (`firstEventMs` until the first event,
   * then `idleMs`; heartbeats count as sound) stalls the turn: replay, whatever was in flight.
   */
  function check(): void {
    const silentMs = now() - heard;
    const limit = state.lastSeq ? (stallOptions.idleMs ?? 25_000) : (stallOptions.firstEventMs ?? 15_000);
    if (silentMs < limit) {
      watchdog = setTimeout(check, limit - silentMs);
      return;
    }
    const kind = state.lastSeq ? 'idle' : 'first-event';
    stall = { at: now(), watchdog: kind };
    say('stalled', { watchdog: kind, silentMs });
    requestReplay();
    setStatus('stalled');
  }

  // ------------------------------------------------------------------ plumbing

  /** Waits `ms` (until woken, when absent) or until `wake`. */
  function sleep(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  function stop(): void {
    abort?.abort();
    alongside?.abort();
    clearTimeout(watchdog);
    wake?.();
    for (const queue of queues) queue();
  }

  function start(replayFirst = false): Promise<void> {
    if (!wanted) return RESOLVED;
    following = true;
    if (done) return RESOLVED;
    const over = replayFirst ? replayOver() : RESOLVED;
    void run();
    return over;
  }

  function close(): void {
    wanted = false;
    release();
    if (!following) return;
    following = false;
    stop();
    if (!done) setConnection('idle');
  }

  persistence.track(id, (): TurnMeta | undefined => {
    // No row until the conversation is known (turn.start or acceptance).
    const conversationId = state.conversationId ?? origin.conversationId;
    return conversationId === undefined
      ? undefined
      : frozen<TurnMeta>({ conversationId, messageId: state.messageId ?? origin.messageId, operationId: origin.operationId, status, createdAt });
  });

  return {
    id,
    completed,
    getSnapshot,
    // Bound by the emitter, so it can be passed around.
    subscribe: listeners.subscribe,

    /** Events applied from now on, each seq once (even through a rebuild), until the turn ends or is closed. */
    async *[Symbol.asyncIterator]() {
      const items: (TurnEvent | undefined)[] = [];
      let notify: (value?: unknown) => void = () => {};
      const queue = (event?: TurnEvent): void => notify(items.push(event));
      if (done || !wanted) return;
      queues.add(queue);
      try {
        for (let lastSeq = 0; ; ) {
          if (!items.length) await new Promise((resolve) => (notify = resolve));
          const event = items.shift();
          if (!event) return;
          if (event.seq <= lastSeq) continue;
          lastSeq = event.seq;
          yield event;
        }
      } finally {
        queues.delete(queue);
      }
    },

    async cancel() {
      const answer = await requestJson(deps, 'POST', path + '/cancel', cancelAnswerSchema, 100_000);
      if (!answer.ok) throw answer.failure.error;
    },

    close,

    get done() {
      return done;
    },
    get lastSeq() {
      return state.lastSeq;
    },
    get createdAt() {
      return createdAt;
    },

    setOrigin(known) {
      origin = { ...origin, ...known };
      changed();
      persistence.saveTurn(id);
    },

    restore({ record, events }) {
      origin = record;
      createdAt = record.createdAt;
      if (record.text !== undefined) {
        // A folded turn: ended, its events are gone.
        state = foldedTurnState(id, { ...record, text: record.text, actions: record.actions ?? [] });
        error = record.error && errorFromJson(record.error);
        return finish(record.status);
      }
      for (const event of events) state = applyEvent(state, event, limits);
      status = live();
      // A row without events (accepted, nothing arrived yet) restored nothing to speak of.
      if (state.lastSeq) markRecovered('reload', state.lastSeq);
      changed();
    },

    start,

    reopen() {
      wanted = true;
      if (!following) void start();
    },

    revive() {
      if (!revivable) return RESOLVED;
      done = revivable = authRetried = false;
      error = undefined;
      return start(true);
    },

    async replayAlongside() {
      if (done || !following || replay || alongside) return;
      const controller = (alongside = new AbortController());
      replayed = 0;
      let more: Failure | boolean = true;
      while (more === true) more = await page(controller.signal).catch(networkFailure);
      if (alongside === controller) alongside = undefined;
      if (more === false) {
        if (replayed) markRecovered('replay', replayed);
      } else if (!controller.signal.aborted && following && !done) await replayOver();
    },

    onNetwork(online) {
      if (online) wake?.();
    },

    onResume() {
      // A stream that received data while the page was frozen delivers nothing after `resume`
      // (measured in Chromium 156: no error, no close) and would wait for the idle watchdog.
      // Reconnect at once from our own cursor instead: one reconnect, said as a cut.
      if (!replay && (connection.state === 'open' || connection.state === 'connecting')) {
        cut = true;
        say('disconnect', { cause: new TransportError('network_error', 'Page resumed from a freeze.') });
        abort?.abort();
      }
    },

    dispose() {
      close();
      batcher.cancel();
    },
  };
}
