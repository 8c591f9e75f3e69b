/**
 * The soak's fault schedule: a pure function of (seed, turns, faults). The same seed
 * gives the same plan on every machine (its hash is printed); when each fault fires
 * depends on timing, what fires does not.
 */
import { createHash } from 'node:crypto';
import { createPrng, type Prng } from '../lib/prng.js';

/** Every kind of fault the soak injects. */
export type FaultKind =
  /** The proxy resets the turn's stream socket after a random number of bytes (mid-event, mid-UTF-8). */
  | 'reset'
  /** The proxy stops forwarding the stream, socket kept open (black hole): the stall watchdog must fire. */
  | 'stall'
  /** The proxy closes the stream cleanly (FIN) before `turn.end`. */
  | 'close'
  /** The turn's submission answers 503 / 429 with `Retry-After`. */
  | 'submit-503'
  | 'submit-429'
  /** The stream black-holes (forcing the replay path) and the turn's replay answers 503 / 429 with `Retry-After`. */
  | 'replay-503'
  | 'replay-429'
  /** One event is sent twice on the stream. */
  | 'duplicate-seq'
  /** One event is left out of the stream (the client must fill the gap by replay). */
  | 'gap-seq'
  /** The HTTP server is closed with all its sockets and started again on the same port (same log, producers go on). */
  | 'server-restart'
  /** The page reloads mid-turn. */
  | 'reload'
  /** The browser goes offline for a while (and the stream is reset so the client must wait for `online`). */
  | 'offline'
  /** A second tab of the same origin opens, runs the client, and closes mid-flight. */
  | 'second-tab';

export const FAULT_KINDS: readonly FaultKind[] = [
  'reset',
  'stall',
  'close',
  'submit-503',
  'submit-429',
  'replay-503',
  'replay-429',
  'duplicate-seq',
  'gap-seq',
  'server-restart',
  'reload',
  'offline',
  'second-tab',
];

/** Relative frequency of each kind. Stalls cost a stall timeout each, so they are rarer. */
const WEIGHTS: Record<FaultKind, number> = {
  reset: 24,
  stall: 7,
  close: 12,
  'submit-503': 6,
  'submit-429': 4,
  'replay-503': 3,
  'replay-429': 2,
  'duplicate-seq': 10,
  'gap-seq': 10,
  'server-restart': 5,
  reload: 7,
  offline: 4,
  'second-tab': 4,
};

/** Faults that act on one stream connection of their turn, in order. */
export const STREAM_KINDS = new Set<FaultKind>(['reset', 'stall', 'close', 'replay-503', 'replay-429', 'duplicate-seq', 'gap-seq']);
/** Faults that act on everything at once; they fire when their turn's log reaches `atSeq`. */
export const GLOBAL_KINDS = new Set<FaultKind>(['server-restart', 'reload', 'offline', 'second-tab']);

export interface Fault {
  /** Position in the schedule (stable id). */
  id: number;
  kind: FaultKind;
  /** The turn it targets (index into the schedule's turns). */
  turn: number;
  /** Stream faults: bytes of the connection passed before the cut/stall (reset, stall, close, replay-*). */
  atByte?: number;
  /** duplicate-seq / gap-seq: the n-th event (1-based) of the connection. */
  atEvent?: number;
  /** Global faults: fire when the turn's log reaches this seq. */
  atSeq?: number;
  /** server-restart: down time; offline: offline time; second-tab: time open. ms. */
  durationMs?: number;
}

export interface TurnPlan {
  index: number;
  /** Conversation index; turns of one conversation run one after the other. */
  conversation: number;
  /** Number of deltas the agent yields. */
  deltas: number;
  /** Seed of the agent's text for this turn. */
  textSeed: number;
  /** Whether the turn runs a `propose_personas` action part way. */
  action: boolean;
  /** Faults targeting this turn, by id, in the order they are applied. */
  faults: number[];
}

export interface Schedule {
  seed: number;
  conversations: number;
  turns: TurnPlan[];
  faults: Fault[];
}

function pickKind(prng: Prng): FaultKind {
  const total = FAULT_KINDS.reduce((sum, kind) => sum + WEIGHTS[kind], 0);
  let at = prng.next() * total;
  for (const kind of FAULT_KINDS) {
    at -= WEIGHTS[kind];
    if (at < 0) return kind;
  }
  return 'reset';
}

/**
 * Builds the plan: `turns` turns spread over `conversations` conversations, and
 * `faults` faults each assigned to a random turn with random parameters.
 */
export function createSchedule(options: { seed: number; turns: number; faults: number; conversations?: number }): Schedule {
  const prng = createPrng(options.seed);
  const conversations = Math.max(1, Math.min(options.conversations ?? 4, options.turns));
  const turns: TurnPlan[] = Array.from({ length: options.turns }, (_, index) => ({
    index,
    conversation: index % conversations,
    deltas: prng.int(120, 320),
    textSeed: prng.int(1, 2 ** 31 - 1),
    action: prng.chance(0.2),
    faults: [],
  }));
  const faults: Fault[] = [];
  for (let id = 0; id < options.faults; id++) {
    const kind = pickKind(prng);
    const turn = prng.int(0, options.turns - 1);
    const plan = turns[turn]!;
    const fault: Fault = { id, kind, turn };
    if (kind === 'reset' || kind === 'close') fault.atByte = prng.int(1, 4000);
    if (kind === 'stall' || kind === 'replay-503' || kind === 'replay-429') fault.atByte = prng.int(1, 3000);
    if (kind === 'duplicate-seq' || kind === 'gap-seq') fault.atEvent = prng.int(2, 25);
    if (GLOBAL_KINDS.has(kind)) fault.atSeq = prng.int(5, Math.max(6, plan.deltas - 20));
    if (kind === 'server-restart') fault.durationMs = prng.int(150, 1200);
    if (kind === 'offline') fault.durationMs = prng.int(200, 1000);
    if (kind === 'second-tab') fault.durationMs = prng.int(500, 2500);
    plan.faults.push(id);
    faults.push(fault);
  }
  return { seed: options.seed, conversations, turns, faults };
}

/** First 16 hex digits of the SHA-256 of the schedule's JSON: equal hashes, equal plans. */
export function scheduleHash(schedule: Schedule): string {
  return createHash('sha256').update(JSON.stringify(schedule)).digest('hex').slice(0, 16);
}
