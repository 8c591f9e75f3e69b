/**
 * One seeded run: a world with one or two tabs, then 20 to 60 steps drawn from the
 * catalogue (every invariant checked after each, the scheduler run until quiescent in
 * between), then the heal phase: faults off, the network back, every producer finishing,
 * a tab open, virtual time run for the retry budget; then the end invariants. The same
 * seed gives the same trace: a failure prints one command that replays it.
 */
import { checkEnd, checkStep, describe, quiet, type Violation } from './invariants.js';
import { CALM } from './network.js';
import { CALM_STORAGE } from './storage.js';
import { dispose, follow, STEPS, type FaultClass } from './steps.js';
import { BusyLoopError } from './scheduler.js';
import { createWorld } from './world.js';

export interface RunOptions {
  /** Only steps of these classes (`app` steps always run). */
  only?: readonly FaultClass[] | undefined;
  /** Steps before the heal phase. Default 20 to 60, drawn from the seed. */
  steps?: number;
}

export interface RunResult {
  seed: number;
  ok: boolean;
  violations: Violation[];
  /** One line per step: `#3 @1.204s tab1 send conv-a msg-1-1`. */
  trace: string[];
  /** A digest of the end state (server logs, every tab's snapshots), for the determinism check. */
  digest: string;
  virtualMs: number;
  peakTimersPerSecond: number;
}

/** Virtual time the heal phase gives everything to finish: the retry budget (30 s), stalls, the outbox's backoff, with room. */
export const HEAL_MS = 120_000;

export async function runSeed(seed: number, options: RunOptions = {}): Promise<RunResult> {
  const world = createWorld(seed);
  const trace: string[] = [];
  const violations: Violation[] = [];
  const at = (): string => `@${(world.scheduler.now() / 1000).toFixed(3)}s`;
  const steps = STEPS.filter((step) => step.cls === 'app' || !options.only || options.only.includes(step.cls));
  const total = steps.reduce((sum, step) => sum + step.weight, 0);
  const check = (found: Violation[]): boolean => (violations.push(...found), found.length === 0);
  try {
    for (let i = world.rng.int(1, 2); i--; ) trace.push(`open ${world.openTab().id}`);
    await world.scheduler.settle();
    const count = options.steps ?? world.rng.int(20, 60);
    for (let n = 1; n <= count && violations.length === 0; n++) {
      let roll = world.rng.next() * total;
      const step = steps.find((s) => (roll -= s.weight) < 0) ?? steps[0]!;
      try {
        const line = await step.run(world);
        if (line === undefined) continue;
        trace.push(`#${n} ${at()} ${line}`);
        await world.scheduler.settle();
      } catch (error) {
        const carried = (error as { violations?: Violation[] }).violations;
        if (carried) {
          trace.push(`#${n} ${at()} ${step.name}`);
          violations.push(...carried);
          break;
        }
        throw error;
      }
      check(checkStep(world));
    }
    if (violations.length === 0) {
      trace.push(`heal ${at()}: faults off, online, producers finish`);
      Object.assign(world.network.faults, CALM);
      Object.assign(world.disk.faults, CALM_STORAGE);
      world.sharing.faults.postThrowsNext = 0;
      world.app.listenersThrow = false;
      world.app.randomThrowsNext = 0;
      world.server.options.unknownEventChance = 0;
      world.platform.setOnline(true);
      world.server.finishAll();
      // A fresh page, as the user reloads: journaled copies a crashed tab left are adopted only by a page that starts.
      trace.push(`open ${world.openTab().id}`);
      // Every turn the server has is followed by some tab, as an app that shows them would.
      const tab = world.tabs.find((t) => t.alive)!;
      for (const turnId of world.server.turns.keys()) follow(world, tab, turnId);
      for (let waited = 0; waited < HEAL_MS && violations.length === 0 && !quiet(world); waited += 1000) {
        await world.scheduler.advance(1000);
        check(checkStep(world));
      }
      if (violations.length === 0 && check(checkEnd(world))) {
        trace.push(`end ${at()}: disposing every tab`);
        for (const tab of world.tabs.filter((t) => t.alive)) if (!check(await dispose(world, tab))) break;
      }
    }
  } catch (error) {
    if (process.env.SIM_DEBUG) console.error(error); violations.push({ kind: error instanceof BusyLoopError ? 'busy-loop' : 'uncaught', detail: `the run threw: ${describe(error)}` });
  } finally {
    world.close();
  }
  if (process.env['SIM_DUMP']) {
    const outbox = await world.disk.disk.loadOutbox();
    console.log('disk outbox:', JSON.stringify(outbox.items.map((r) => [r.operationId, r.state, r.conversationId, r.createdAt, r.nextAttemptAt, r.attempts])));
    const journal = Array.from({ length: world.disk.localStorage.length }, (_, i) => world.disk.localStorage.key(i));
    console.log('journal:', JSON.stringify(journal), 'wall', world.scheduler.wall());
  }
  const digest = JSON.stringify([
    [...world.server.turns.values()].map((t) => [t.id, t.log.length, t.status]),
    world.tabs.map((tab) => [tab.id, tab.alive, tab.diagnostics]),
    world.network.log.length,
  ]);
  if (violations.length) trace.push(`VIOLATION ${at()}: ${violations.map((v) => `[${v.kind}] ${v.detail}`).join('; ')}`);
  return { seed, ok: violations.length === 0, violations, trace, digest, virtualMs: world.scheduler.now(), peakTimersPerSecond: world.scheduler.peakTimersPerSecond };
}

/** What a failing seed prints: the violation, the command that replays it, the last steps. */
export function report(result: RunResult, only?: readonly FaultClass[], lines = 25): string {
  const command = `npm run sim -- --seed ${result.seed}${only ? ` --only ${only.join(',')}` : ''}`;
  const tail = result.trace.slice(-lines);
  return [
    `sim: seed ${result.seed} FAILED: ${result.violations.map((v) => `[${v.kind}] ${v.detail}`).join('; ')}`,
    `  replay: ${command}`,
    `  trace (last ${tail.length} of ${result.trace.length} lines):`,
    ...tail.map((line) => `    ${line}`),
  ].join('\n');
}
