/**
 * The follower's transition table: for each phase, what each input does there, as data
 * (`TABLE`), beside the rules that hold in every phase (`EVERY_PHASE`) and those shared
 * by every phase that follows the turn (`FOLLOWING`). A phase's own row wins; an input
 * found in neither means nothing there and changes nothing. Each rule names where it
 * may lead (`to`): docs/architecture.md shows the table rendered from it (`npm run
 * docs:tables`), and the model test checks every transition stays inside it.
 *
 * `transition(state, input, env)` answers the next state and the effects to run, and
 * does nothing else (no timers, no requests, no clock: `env` brings time and randomness).
 * The per-event hot path never comes here: the runner applies events itself and reports
 * only an attempt's first progress, a gap, and the end.
 */
import { FRESH_BACKOFF } from './backoff.js';
import { stallLimitMs, STREAM_MODE } from './follow-state.js';
import { failed, finish, go, markStalled, next, reopen, requestReplay, run, say, set, stop, verified, watch, type Step } from './follow-steps.js';
import type { FollowEnv, FollowInput, FollowState, Phase, TimerName, Transition } from './follow-types.js';
import { TransportError } from '../errors.js';

export { initialFollowState, stallLimitMs } from './follow-state.js';

/** An input as the table keys it: a result names its slot, a timer its name. */
export type InputKey =
  | Exclude<FollowInput['kind'], 'failed' | 'page' | 'timer'>
  | `failed:${'main' | 'alongside'}`
  | `page:${'main' | 'alongside'}`
  | `timer:${TimerName}`;

type InputFor<K extends InputKey> = K extends `${infer Kind}:${string}` ? Extract<FollowInput, { kind: Kind }> : Extract<FollowInput, { kind: K }>;

/** Where a rule may lead: a phase, `=` (stays, maybe with new data), or `next` (the loop's next step, chosen by the state). */
export type Target = Phase | '=' | 'next';

/** The phases `next` chooses from: settling (ended), offline, watching, replaying, connecting. */
export const NEXT_PHASES: readonly Phase[] = ['settling', 'offline', 'watching', 'replaying', 'connecting'];

export interface Rule<K extends InputKey = InputKey> {
  readonly to: readonly Target[];
  readonly run: (step: Step, input: InputFor<K>) => void;
}

type Row = { readonly [K in InputKey]?: Rule<K> };

export function keyOf(input: FollowInput): InputKey {
  switch (input.kind) {
    case 'failed':
    case 'page':
      return `${input.kind}:${input.slot}`;
    case 'timer':
      return `timer:${input.timer}`;
    default:
      return input.kind;
  }
}

/** Said when a watchdog fires: which one, by whether any event was heard. */
const stalled = (step: Step, silentMs: number): void =>
  say(step, { type: 'stalled', watchdog: step.state.seen === 'nothing' ? 'first-event' : 'idle', silentMs });

const startAlongside = (step: Step): void =>
  run(step, { kind: 'fetch-page', slot: 'alongside' }, { kind: 'arm', timer: 'alongside', ms: stallLimitMs(step.state, step.env), fresh: true });

/** The regions every phase keeps up to date, and `close`. */
const EVERY_PHASE: Row = {
  online: { to: ['='], run: (step) => set(step, { online: true }) },
  offline: { to: ['='], run: (step) => set(step, { online: false }) },
  role: { to: ['='], run: (step, { role }) => set(step, { role }) },
  close: { to: ['idle', '='], run: stop },
};

/** What every phase that follows the turn (all but idle and done) does alike. */
const FOLLOWING: Row = {
  start: { to: ['=', 'next'], run: (step, { replayFirst }) => replayFirst && requestReplay(step, 'start') },
  recover: {
    to: ['='],
    run(step) {
      // Replaying already, or one alongside already: whoever waits is answered by that one.
      if (step.state.mode.via === 'replay' || step.state.alongside) return run(step, { kind: 'release' });
      set(step, { alongside: { replayed: 0 } });
      startAlongside(step);
    },
  },
  progress: {
    to: ['='],
    run(step, { from, seq }) {
      const { mode } = step.state;
      set(step, { seen: step.state.seen === 'end' ? 'end' : 'events', progressed: true, backoff: FRESH_BACKOFF });
      // A resumed connection first delivers, in one burst, what was logged while we were away.
      if (from === 'stream' && mode.via === 'stream' && mode.cut && seq > 1) {
        set(step, { mode: { ...mode, cut: false } });
        say(step, { type: 'recovered', path: 'resume', events: 0 });
      }
    },
  },
  gap: { to: ['=', 'next'], run: (step) => requestReplay(step, 'gap') },
  ended: {
    to: ['next'],
    run(step) {
      set(step, { seen: 'end' });
      run(step, { kind: 'abort', slot: 'main' }, { kind: 'clear', timer: 'stall' });
      next(step);
    },
  },
  'no-content': { to: ['=', 'next'], run: (step) => requestReplay(step, 'ended-stream') },
  'failed:alongside': { to: ['=', 'next'], run: (step) => step.state.alongside && requestReplay(step, 'alongside-failed') },
  'page:alongside': {
    to: ['='],
    run(step, { applied, more }) {
      const { alongside } = step.state;
      if (!alongside) return;
      const replayed = alongside.replayed + applied;
      if (more) return set(step, { alongside: { replayed } }), startAlongside(step);
      set(step, { alongside: undefined });
      run(step, { kind: 'clear', timer: 'alongside' });
      if (replayed) say(step, { type: 'recovered', path: 'replay', events: replayed });
      if (step.state.seen !== 'end') run(step, { kind: 'release' });
    },
  },
  'timer:alongside': {
    to: ['=', 'next'],
    run(step, { silentMs }) {
      if (!step.state.alongside) return;
      stalled(step, silentMs);
      requestReplay(step, 'alongside-failed');
    },
  },
};

/** Reconnect at once: back online, or the page back from a freeze. */
const goNow: Rule<'online'> = { to: ['next'], run: (step) => (set(step, { online: true }), next(step)) };

/** A request of the main loop failed. */
const mainFailed: Rule<'failed:main'> = { to: ['waiting', 'next', 'done'], run: (step, { failure, closed }) => failed(step, failure, closed === true) };

/** The stall watchdog fired: the rest of the window if sound came since, else the log. */
const streamStall: Rule<'timer:stall'> = {
  to: ['=', 'next'],
  run(step, { silentMs }) {
    const limit = stallLimitMs(step.state, step.env);
    // Events only stamp the time they were heard: the timer waits out the rest of the window.
    if (silentMs < limit) return run(step, { kind: 'arm', timer: 'stall', ms: limit - silentMs });
    stalled(step, silentMs);
    requestReplay(step, 'stall');
    markStalled(step);
  },
};

/** Each phase's own rules. */
const TABLE: { readonly [P in Phase]: Row } = {
  idle: {
    // Nothing replays: whoever waits is answered now.
    recover: { to: ['='], run: (step) => run(step, { kind: 'release' }) },
    restored: {
      to: ['=', 'done'],
      run(step, { hasEvents, ended, final }) {
        set(step, { seen: ended ? 'end' : hasEvents ? 'events' : 'nothing' });
        if (final) finish(step, final.status, final.error, false);
      },
    },
    start: {
      to: ['next'],
      run(step, { replayFirst }) {
        if (replayFirst) requestReplay(step);
        next(step);
      },
    },
  },
  offline: { ...FOLLOWING, online: goNow },
  watching: {
    ...FOLLOWING,
    role: {
      to: ['=', 'next'],
      run(step, { role }) {
        set(step, { role });
        if (role !== 'watcher') run(step, { kind: 'clear', timer: 'stall' }), next(step);
      },
    },
    'timer:stall': streamStall,
  },
  connecting: {
    ...FOLLOWING,
    opened: {
      to: ['streaming'],
      run(step, { lastEventId, heartbeatMs }) {
        go(step, { phase: 'streaming' });
        set(step, { authRetried: false, heartbeatMs: heartbeatMs ?? step.state.heartbeatMs });
        say(step, { type: 'open', status: 200 });
        if (lastEventId) say(step, { type: 'resumed', fromSeq: lastEventId });
        // The announced heartbeat may shorten the watchdog: counted from the last sound heard.
        run(step, { kind: 'arm', timer: 'stall', ms: stallLimitMs(step.state, step.env) });
      },
    },
    resume: { to: ['next'], run: resumed },
    'failed:main': mainFailed,
    'timer:stall': streamStall,
  },
  streaming: {
    ...FOLLOWING,
    resume: { to: ['next'], run: resumed },
    'failed:main': mainFailed,
    'timer:stall': streamStall,
  },
  waiting: { ...FOLLOWING, online: goNow, 'timer:retry': { to: ['next'], run: next } },
  replaying: {
    ...FOLLOWING,
    // A page ends on its own (its answer follows): the loop settles after it.
    ended: { to: ['='], run: (step) => set(step, { seen: 'end' }) },
    'page:main': {
      to: ['=', 'next'],
      run(step, { applied, more }) {
        const { mode } = step.state;
        const replayed = (mode.via === 'replay' ? mode.replayed : 0) + applied;
        set(step, { authRetried: false, mode: mode.via === 'replay' ? { ...mode, replayed } : mode });
        if (more) return run(step, { kind: 'fetch-page', slot: 'main' }), watch(step);
        run(step, { kind: 'clear', timer: 'stall' });
        if (replayed) say(step, { type: 'recovered', path: 'replay', events: replayed });
        set(step, { mode: STREAM_MODE });
        // An ended turn is released once settled, so `recover()` answers final snapshots.
        if (step.state.seen !== 'end') run(step, { kind: 'release' });
        next(step);
      },
    },
    'failed:main': mainFailed,
    'timer:stall': {
      to: ['waiting', 'next', 'done'],
      run(step, { silentMs }) {
        stalled(step, silentMs);
        // A replay page that hangs is a failure like any other: it counts against the retry budget.
        run(step, { kind: 'abort', slot: 'main' });
        markStalled(step);
        failed(step, { error: new TransportError('timeout', 'The replay request hung.'), disposition: 'retry' }, false);
      },
    },
  },
  settling: {
    ...FOLLOWING,
    // The integrity check runs once; `recover()` waits for the settled turn.
    ended: { to: ['='], run: (step) => set(step, { seen: 'end' }) },
    recover: { to: ['='], run: (step) => run(step, { kind: 'release' }) },
    verified: { to: ['done', 'next'], run: verified },
  },
  done: {
    revive: {
      to: ['=', 'next'],
      run(step) {
        if (step.state.phase !== 'done' || !step.state.revivable) return;
        reopen(step);
        TABLE.idle.start!.run(step, { kind: 'start', replayFirst: true });
      },
    },
    rebuild: {
      to: ['=', 'next'],
      run(step) {
        // Only an ended turn this client verified; `rebuilt` makes a second difference a failure, not a loop.
        if (step.state.phase !== 'done' || step.state.error !== undefined) return;
        reopen(step);
        set(step, { rebuilt: true, seen: 'nothing' });
        run(step, { kind: 'discard' });
        TABLE.idle.start!.run(step, { kind: 'start', replayFirst: true });
      },
    },
    // Nothing replays any more: whoever waits is answered now.
    recover: { to: ['='], run: (step) => run(step, { kind: 'release' }) },
  },
};

/** A stream that got data while the page was frozen is deaf after `resume` (or `client.drill` cuts it): reconnect now, said as a cut. */
function resumed(step: Step, { drill }: Extract<FollowInput, { kind: 'resume' }>): void {
  const { mode } = step.state;
  if (mode.via === 'stream') set(step, { mode: { ...mode, cut: true } });
  say(step, { type: 'disconnect', cause: new TransportError('network_error', drill ? 'Cut by client.drill.' : 'Page resumed from a freeze.') });
  run(step, { kind: 'abort', slot: 'main' });
  next(step);
}

/** The rule `input` meets in `phase`, or `undefined` when it means nothing there. */
export function ruleFor(phase: Phase, key: InputKey): Rule | undefined {
  return (TABLE[phase][key] ?? EVERY_PHASE[key]) as Rule | undefined;
}

/** Every input key, in the order the docs list them. */
export const INPUT_KEYS: readonly InputKey[] = [
  'restored', 'start', 'close', 'revive', 'rebuild', 'recover', 'online', 'offline', 'resume', 'role',
  'opened', 'progress', 'gap', 'ended', 'no-content', 'failed:main', 'failed:alongside',
  'page:main', 'page:alongside', 'timer:stall', 'timer:retry', 'timer:alongside', 'verified',
];

/** Every phase, in the table's order (for the docs' table; pure, so a bundle that never reads it drops it). */
export const PHASES = /* @__PURE__ */ Object.keys(TABLE) as Phase[];

/** The transition function. Inputs that mean nothing in the current state change nothing. */
export function transition(state: FollowState, input: FollowInput, env: FollowEnv): Transition {
  const step: Step = { state, effects: [], env };
  ruleFor(state.phase, keyOf(input))?.run(step, input as never);
  return { state: step.state, effects: step.effects };
}
