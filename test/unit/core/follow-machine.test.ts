/**
 * Model-based tests of the follower's machine (no network, no timers): random sequences
 * of the inputs the world could send in each state, with the machine's effects carried out
 * by a model of the runner (which requests are out, which timers are armed), and the
 * invariants checked after every step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/core/backoff.js';
import { keyOf, NEXT_PHASES, ruleFor, initialFollowState, stallLimitMs, transition } from '../../../src/core/follow-machine.js';
import { connectionOf, retryAtOf, statusOf } from '../../../src/core/follow-state.js';
import type { FollowEnv, FollowInput, FollowState, TimerName } from '../../../src/core/follow-types.js';
import { ProtocolError, TransportError } from '../../../src/errors.js';

const POLICY = { ...DEFAULT_RETRY_POLICY, maxElapsedMs: 60_000 };

/** The runner, as a model: what the machine's effects left running. */
class World {
  state: FollowState = initialFollowState();
  now = 1_000_000;
  random = 0.5;
  /** What each slot's request is, while one is out. */
  main: 'stream' | 'page' | undefined;
  mainOpened = false;
  alongside = false;
  timers = new Map<TimerName, number>();
  verifying = false;
  settled = 0;
  log: string[] = [];

  env(): FollowEnv {
    return { now: this.now, random: this.random, config: { retry: POLICY } };
  }

  send(input: FollowInput): void {
    this.log.push(input.kind);
    const before = this.state.phase;
    const rule = ruleFor(before, keyOf(input));
    const { state, effects } = transition(this.state, input, this.env());
    this.state = state;
    // The table's `to` (what docs/architecture.md shows) holds for every transition taken.
    const allowed = (rule?.to ?? ['=']).flatMap((target) => (target === '=' ? [before] : target === 'next' ? NEXT_PHASES : [target]));
    expect(allowed, `${before} --${keyOf(input)}--> ${state.phase} is not in the table`).toContain(state.phase);
    for (const effect of effects) {
      switch (effect.kind) {
        case 'open-stream':
        case 'fetch-page':
          if (effect.kind === 'fetch-page' && effect.slot === 'alongside') {
            expect(this.alongside, 'a second alongside replay while one is out').toBe(false);
            this.alongside = true;
          } else {
            // At most one request of the main loop in flight, ever.
            expect(this.main, `a second main request (${effect.kind}) while one is out`).toBeUndefined();
            this.main = effect.kind === 'open-stream' ? 'stream' : 'page';
            this.mainOpened = false;
          }
          break;
        case 'abort':
          if (effect.slot === 'main') this.main = undefined;
          else this.alongside = false;
          break;
        case 'arm':
          this.timers.set(effect.timer, this.now + effect.ms);
          break;
        case 'clear':
          this.timers.delete(effect.timer);
          break;
        case 'verify':
          this.verifying = true;
          break;
        case 'settle':
          this.settled++;
          break;
      }
    }
    this.checkInvariants();
  }

  /** Every state that is not terminal waits on something that will come. */
  checkInvariants(): void {
    const { phase } = this.state;
    // What the app sees follows from the phase.
    expect(connectionOf(this.state) === 'open').toBe(phase === 'streaming');
    expect(retryAtOf(this.state) !== undefined).toBe(phase === 'waiting');
    expect(['complete', 'failed', 'cancelled'].includes(statusOf(this.state))).toBe(phase === 'done');
    const waitsOn = [this.main && 'request', this.timers.size && 'timer', this.verifying && 'verify'].filter(Boolean);
    if (phase === 'done' || phase === 'idle') {
      expect(this.main, `${phase} with a request out`).toBeUndefined();
      expect([...this.timers.keys()].filter((t) => t !== 'alongside' || !this.alongside), `${phase} with timers`).toEqual([]);
      return;
    }
    // Offline waits for `online` (an external wake), nothing else.
    if (phase === 'offline') return;
    expect(waitsOn.length, `${phase} waits on nothing (${this.log.join(' → ')})`).toBeGreaterThan(0);
    if (phase === 'connecting' || phase === 'streaming' || phase === 'replaying') {
      expect(this.main).toBeDefined();
      expect(this.timers.has('stall'), `${phase} without its watchdog`).toBe(true);
    }
    if (phase === 'waiting') expect(this.timers.has('retry')).toBe(true);
    if (phase === 'watching') expect(this.timers.has('stall')).toBe(true);
    if (phase === 'settling') expect(this.verifying).toBe(true);
    if (this.alongside) expect(this.timers.has('alongside'), 'an alongside replay without its timer').toBe(true);
  }

  /** Fires a timer at its deadline (the clock jumps there). */
  fire(timer: TimerName): void {
    const at = this.timers.get(timer)!;
    this.now = Math.max(this.now, at);
    this.timers.delete(timer);
    this.send({ kind: 'timer', timer, silentMs: stallLimitMs(this.state, this.env()) });
  }

  /** The main request fails (and is no longer out). */
  failMain(failure: Extract<FollowInput, { kind: 'failed' }>['failure'], closed = false): void {
    this.main = undefined;
    this.send({ kind: 'failed', slot: 'main', failure, closed });
  }
}

const retry = (status = 503) => ({ error: new TransportError('server_unavailable', 'down', { status }), disposition: 'retry' as const });

/** One thing the world may do now: `undefined` when it cannot happen in this state. */
type Move = (world: World, pick: number) => (() => void) | undefined;

const MOVES: Record<string, Move> = {
  opened: (w) => (w.main === 'stream' && !w.mainOpened ? () => ((w.mainOpened = true), w.send({ kind: 'opened', lastEventId: 0, heartbeatMs: 3000 })) : undefined),
  progress: (w, pick) => (w.main || w.state.phase === 'watching' ? () => w.send({ kind: 'progress', from: w.main === 'page' ? 'replay' : w.main ? 'stream' : 'relay', seq: 1 + (pick % 5) }) : undefined),
  failMain: (w, pick) => (w.main ? () => w.failMain([retry(), { error: new TransportError('unauthorized', 'no', { status: 401 }), disposition: 'auth' as const }, retry(429)][pick % 3]!, pick % 2 === 0) : undefined),
  fatal: (w) => (w.main && w.state.phase !== 'settling' ? () => w.failMain({ error: new ProtocolError('seq_mismatch', 'bad'), disposition: 'fatal' }) : undefined),
  page: (w, pick) => (w.main === 'page' ? () => ((w.main = undefined), w.send({ kind: 'page', slot: 'main', applied: pick % 3, more: pick % 4 === 0 })) : undefined),
  alongsidePage: (w, pick) => (w.alongside ? () => ((w.alongside = false), w.send({ kind: 'page', slot: 'alongside', applied: 1, more: pick % 3 === 0 })) : undefined),
  alongsideFails: (w) => (w.alongside ? () => ((w.alongside = false), w.send({ kind: 'failed', slot: 'alongside', failure: retry() })) : undefined),
  noContent: (w) => (w.main === 'stream' && !w.mainOpened ? () => ((w.main = undefined), w.send({ kind: 'no-content' })) : undefined),
  gap: (w) => (w.state.phase !== 'idle' && w.state.phase !== 'done' ? () => w.send({ kind: 'gap' }) : undefined),
  ended: (w) => (w.state.phase !== 'idle' && w.state.phase !== 'done' && w.state.seen !== 'end' ? () => w.send({ kind: 'ended' }) : undefined),
  verified: (w, pick) =>
    w.verifying ? () => ((w.verifying = false), w.send({ kind: 'verified', matches: pick % 3 !== 0, status: 'complete', expectedLength: 1, actualLength: 1 })) : undefined,
  timer: (w, pick) => {
    const armed = [...w.timers.keys()];
    return armed.length ? () => w.fire(armed[pick % armed.length]!) : undefined;
  },
  online: (w) => () => w.send({ kind: 'online' }),
  offline: (w) => () => w.send({ kind: 'offline' }),
  resume: (w) => () => w.send({ kind: 'resume' }),
  drillCut: (w) => () => w.send({ kind: 'resume', drill: true }),
  recover: (w) => () => w.send({ kind: 'recover' }),
  lead: (w) => (w.state.role === 'watcher' ? () => w.send({ kind: 'role', role: 'leader' }) : undefined),
  close: (w) => () => {
    w.send({ kind: 'close' });
    w.main = undefined;
    w.verifying = false;
  },
  start: (w, pick) => () => w.send({ kind: 'start', replayFirst: pick % 2 === 0 }),
  revive: (w) => () => w.send({ kind: 'revive' }),
  rebuild: (w) => () => w.send({ kind: 'rebuild' }),
};

/** The state of a finished turn (fails the test when it is not). */
function finished(world: World): Extract<FollowState, { phase: 'done' }> {
  const { state } = world;
  if (state.phase !== 'done') throw new Error(`not done: ${state.phase}`);
  return state;
}

/** A main request aborted by the machine is gone from the model too (done in `send`); a verify dropped by `close` likewise. */
function step(world: World, name: string, pick: number): void {
  const move = MOVES[name]!(world, pick);
  if (move) move();
}

describe('the follower machine, model-based', () => {
  it('never waits on nothing and never has two main requests out, for any sequence of inputs', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'solo' | 'watcher'>('solo', 'watcher'),
        fc.array(fc.tuple(fc.constantFrom(...Object.keys(MOVES)), fc.nat(1000)), { maxLength: 80 }),
        (role, moves) => {
          const world = new World();
          world.send({ kind: 'role', role });
          world.send({ kind: 'start', replayFirst: false });
          for (const [name, pick] of moves) step(world, name, pick);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('a server that never answers ends the turn failed (retry_exhausted) within the retry budget', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.999, noNaN: true }), fc.boolean(), (random, replayFirst) => {
        const world = new World();
        world.random = random;
        const started = world.now;
        world.send({ kind: 'start', replayFirst });
        // Nothing ever answers: only the timers fire (the stall watchdog, the backoff).
        for (let i = 0; i < 1000 && world.state.phase !== 'done'; i++) world.fire([...world.timers.keys()][0]!);
        const done = finished(world);
        expect(done.status).toBe('failed');
        expect(done.error?.code).toBe('retry_exhausted');
        expect(done.revivable).toBe(true);
        // Within the budget: the first stall and the first hung replay come before the budget's clock
        // starts (at the first counted failure); the give-up comes at most one more watchdog past it.
        expect(world.now - started).toBeLessThanOrEqual(POLICY.maxElapsedMs + 3 * 15_000);
      }),
      { numRuns: 100 },
    );
  });

  it('a revive starts a fresh retry budget: the first failure after it is retried', () => {
    const world = new World();
    world.send({ kind: 'start', replayFirst: false });
    while (world.state.phase !== 'done') {
      if (world.main) world.failMain(retry());
      else world.fire('retry');
    }
    expect(finished(world).error?.code).toBe('retry_exhausted');
    world.send({ kind: 'revive' });
    expect(world.state.backoff.attempt).toBe(0);
    expect(world.main).toBe('page');
    world.failMain(retry());
    expect(world.state.phase).toBe('waiting');
    // The revived turn replays first: its retry shows as the replay it is.
    expect(statusOf(world.state)).toBe('recovering');
  });

  it('a replay page that hangs counts against the budget (no endless replays)', () => {
    const world = new World();
    world.send({ kind: 'start', replayFirst: true });
    let replays = 0;
    while (world.state.phase !== 'done' && replays < 500) {
      if (world.main === 'page') replays++;
      world.fire(world.timers.has('retry') ? 'retry' : 'stall');
    }
    expect(finished(world).error?.code).toBe('retry_exhausted');
    expect(replays).toBeLessThan(50);
  });

  it('sizes the watchdog from the announced heartbeat unless the app set its own', () => {
    const env = (idleMs?: number): FollowEnv => ({ now: 0, random: 0, config: { retry: POLICY, idleMs } });
    const live = { ...initialFollowState(), seen: 'events' as const };
    expect(stallLimitMs(live, env())).toBe(25_000);
    expect(stallLimitMs({ ...live, heartbeatMs: 3000 }, env())).toBe(7500);
    expect(stallLimitMs({ ...live, heartbeatMs: 100 }, env())).toBe(2000);
    expect(stallLimitMs({ ...live, heartbeatMs: 3000 }, env(40_000))).toBe(40_000);
  });
});
