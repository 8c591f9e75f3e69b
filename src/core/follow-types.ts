/**
 * The follower's machine, as data: every state it can be in, every input that moves it,
 * every effect it asks for. Read this file first; `follow-machine.ts` is the transition
 * table over these unions (rendered into docs/architecture.md), `follow-steps.ts` the steps
 * its rules share, `follow/` runs the effects.
 *
 * The state is a union by `phase` (the main loop: one request or one wait at a time), each
 * variant with only its own data, beside regions that change on their own: the tab role,
 * the network, what the events told, which way the loop reads the turn, a `recover()`
 * replay alongside, the retry budget. What the app sees (`status`, `connection`) is derived
 * from it (`follow-state.ts`), never stored.
 */
import type { LifelineError } from '../errors.js';
import type { BackoffState, RetryPolicy } from './backoff.js';
import type { EndedTurnStatus } from './domain.js';
import type { Failure } from './failure-policy.js';

/** Where the main loop is, with what only that phase holds. Each non-terminal phase has a request in flight, a timer, or an awaited wake. */
export type LoopPhase =
  /** Not following (before `start`, or closed): waits for `start`. */
  | { readonly phase: 'idle' }
  /** The browser is offline: waits for `online` (no timer, no request). */
  | { readonly phase: 'offline' }
  /** Another tab streams and relays: the stall timer watches the relay. */
  | { readonly phase: 'watching' }
  /** A stream request is in flight (headers, then the response): stall timer armed. */
  | { readonly phase: 'connecting' }
  /** The stream is open: stall timer armed (events and heartbeats restart it). */
  | { readonly phase: 'streaming' }
  /** Waiting out a backoff delay until `retryAt` (monotonic ms): retry timer armed. */
  | { readonly phase: 'waiting'; readonly retryAt: number }
  /** One replay page is in flight: stall timer armed (a hang counts as a failure). */
  | { readonly phase: 'replaying' }
  /** `turn.end` applied: the integrity check is in flight. */
  | { readonly phase: 'settling' }
  /** Ended (complete, cancelled) or failed: nothing runs. A `revivable` failure may `revive`. */
  | { readonly phase: 'done'; readonly status: EndedTurnStatus; readonly error: LifelineError | undefined; readonly revivable: boolean };

export type Phase = LoopPhase['phase'];

export type TabRole = 'solo' | 'leader' | 'watcher';

/** Which request a result belongs to: the main loop's, or the replay `recover()` runs alongside. */
export type RequestSlot = 'main' | 'alongside';

/** Named timers the runner owns; arming one replaces its previous deadline. */
export type TimerName = 'stall' | 'retry' | 'alongside';

/** Why the main loop replays instead of streaming. */
export type ReplayCause = 'start' | 'stall' | 'gap' | 'ended-stream' | 'failures' | 'rebuild' | 'alongside-failed';

/** Settings the machine reads (the app's options with their defaults applied by the runner). */
export interface FollowConfig {
  retry: RetryPolicy;
  /** The app's own watchdogs, when it set them: they win over the server's heartbeat. */
  firstEventMs?: number | undefined;
  idleMs?: number | undefined;
}

/** Which way the main loop reads the turn, with what each way counts. */
export type LoopMode =
  /**
   * The stream. `misses`: attempts in a row that ended without applying anything; `cut`: the
   * last attempt ended by a cut, so the next connection's first burst is a resume.
   */
  | { readonly via: 'stream'; readonly misses: number; readonly cut: boolean }
  /** Pages of the log. `replayed`: events applied so far; `stalled`: a watchdog sent it here or fired during it. */
  | { readonly via: 'replay'; readonly replayed: number; readonly stalled: boolean };

/** What the applied events told so far (restored ones included). */
export type Seen = 'nothing' | 'events' | 'end';

/** The regions beside the phase: each changes on its own. */
export interface FollowRegions {
  readonly mode: LoopMode;
  readonly role: TabRole;
  readonly online: boolean;
  readonly seen: Seen;
  /** A `recover()` replay running next to the main loop, and the events it applied. */
  readonly alongside: { readonly replayed: number } | undefined;
  /** Failures since the last progress, and when they began. */
  readonly backoff: BackoffState;
  /** The current attempt (stream or page) applied an event. */
  readonly progressed: boolean;
  /** A 401/403 was retried once with fresh headers (a second one in a row is final). */
  readonly authRetried: boolean;
  /** The turn was rebuilt once already: a second text difference is a failure, not a loop. */
  readonly rebuilt: boolean;
  /** `Lifeline-Heartbeat` of the last opened stream, ms. */
  readonly heartbeatMs: number | undefined;
}

/** The whole machine state: plain data, replaced on every transition. */
export type FollowState = FollowRegions & LoopPhase;

/** Everything that can happen to a follower. Results of requests name their slot. */
export type FollowInput =
  /** What storage held, before any network: events (maybe up to `turn.end`), or a final folded turn. */
  | { kind: 'restored'; hasEvents: boolean; ended: boolean; final?: { status: EndedTurnStatus; error: LifelineError | undefined } }
  | { kind: 'start'; replayFirst: boolean }
  | { kind: 'close' }
  | { kind: 'revive' }
  /** The server says a verified turn's text differs (a delivery receipt's `409`, docs/protocol.md section 10): rebuild it. */
  | { kind: 'rebuild' }
  | { kind: 'recover' }
  | { kind: 'online' }
  | { kind: 'offline' }
  /** The page came back from a freeze (its stream may be deaf), or `client.drill` cuts it: the stream is dropped as a cut. */
  | { kind: 'resume'; drill?: true }
  | { kind: 'role'; role: TabRole }
  /** The stream answered 200 text/event-stream. */
  | { kind: 'opened'; lastEventId: number; heartbeatMs: number | undefined }
  /** The first event an attempt (stream, page or relay) applied; later ones are not reported. */
  | { kind: 'progress'; from: 'stream' | 'replay' | 'relay'; seq: number }
  /** Events are missing before the one that arrived (or the leader is ahead), or a `replay` drill asks: read the log. */
  | { kind: 'gap' }
  /** `turn.end` was applied. */
  | { kind: 'ended' }
  /** The stream answered 204: the turn ended with nothing after our cursor. */
  | { kind: 'no-content' }
  /** A request ended in a failure (a cut is one: `closed` when it closed cleanly before `turn.end`). */
  | { kind: 'failed'; slot: RequestSlot; failure: Failure; closed?: boolean }
  /** A replay page was applied; `more` when the log holds more after it. */
  | { kind: 'page'; slot: RequestSlot; applied: number; more: boolean }
  | { kind: 'timer'; timer: TimerName; silentMs: number }
  /** The integrity check's answer. */
  | { kind: 'verified'; matches: boolean; status: EndedTurnStatus; expectedLength: number; actualLength: number };

/** Diagnostics the machine decides on; the runner stamps `at` and `turnId`. */
export type FollowNotice =
  | { type: 'recovering' }
  | { type: 'recovered'; path: 'resume' | 'replay'; events: number }
  | { type: 'stalled'; watchdog: 'first-event' | 'idle'; silentMs: number }
  | { type: 'disconnect'; cause: LifelineError }
  | { type: 'retry'; scope: 'stream' | 'replay'; attempt: number; delayMs: number; cause: LifelineError }
  | { type: 'open'; status: number }
  | { type: 'resumed'; fromSeq: number }
  | { type: 'auth-refresh' }
  | { type: 'protocol-error'; error: LifelineError }
  | { type: 'integrity-mismatch'; expectedLength: number; actualLength: number }
  | { type: 'completed'; status: EndedTurnStatus }
  | { type: 'failed'; scope: 'stream' | 'replay'; error: LifelineError };

/** What the machine asks the runner to do, in order. Plain data. */
export type FollowEffect =
  | { kind: 'open-stream' }
  | { kind: 'fetch-page'; slot: RequestSlot }
  | { kind: 'abort'; slot: RequestSlot }
  /** `fresh`: silence is counted from now (a new request); else from the last sound heard. */
  | { kind: 'arm'; timer: TimerName; ms: number; fresh?: boolean }
  | { kind: 'clear'; timer: TimerName }
  | { kind: 'say'; notice: FollowNotice }
  /** Leave the tabs sharing this turn (the runner joins them before `start`; the role arrives as an input). */
  | { kind: 'leave' }
  /** Check the ended turn's text against `turn.end`. */
  | { kind: 'verify' }
  /** Throw the local copy away (a rebuild replays from seq 0). */
  | { kind: 'discard' }
  /** Store the ended turn as one folded row. */
  | { kind: 'fold'; error?: LifelineError }
  /** Resolve whoever waits for the running replay (`start(true)`, `recover()`). */
  | { kind: 'release' }
  /** The turn reached `done` (or left it by `revive`). */
  | { kind: 'settle' }
  | { kind: 'unsettle' };

/** One step of the machine. */
export interface Transition {
  state: FollowState;
  effects: FollowEffect[];
}

/** What a transition may read besides the state: time and randomness, passed in so it stays pure. */
export interface FollowEnv {
  now: number;
  /** Uniform in [0, 1), for backoff jitter. */
  random: number;
  config: FollowConfig;
}
