/**
 * What CI runs of the simulator: seeds 1..SEEDS in four files (sim.test.ts, sim-part-2..4),
 * so the two workers share them evenly. Seeds that still find a defect not fixed yet are listed
 * with it: they are checked to still fail (so a fix shows up as a failure telling you to delete
 * the line), every other seed must hold every invariant. `SIM_SEEDS=n` runs 1..n instead.
 */
import { expect } from 'vitest';
import { report, runSeed } from '../../sim/run.js';

export const SEEDS = Number(process.env['SIM_SEEDS'] ?? 2400);
/** How many files share the seeds. */
export const PARTS = 4;

/** Open defects the simulator finds on the merged code (docs/reliability.md "Simulator"), by seed. None today. */
export const KNOWN_OPEN: ReadonlyMap<number, string> = new Map<number, string>([]);

/** The seeds of part `part` (1-based) of {@link PARTS}: a contiguous range. */
export function partRange(part: number): [from: number, to: number] {
  const size = Math.ceil(SEEDS / PARTS);
  return [(part - 1) * size + 1, Math.min(part * size, SEEDS)];
}

/** Runs seeds `from..to`: known-open ones must still fail, every other one must pass. */
export async function runRange(from: number, to: number): Promise<void> {
  const failures: string[] = [];
  const fixed: number[] = [];
  for (let seed = from; seed <= Math.min(to, SEEDS) && failures.length < 3; seed++) {
    const result = await runSeed(seed);
    if (KNOWN_OPEN.has(seed)) {
      if (result.ok) fixed.push(seed);
    } else if (!result.ok) failures.push(report(result));
  }
  expect(failures, failures.join('\n\n')).toEqual([]);
  expect(fixed, `seeds ${fixed.join(', ')} pass now: delete them from KNOWN_OPEN (test/unit/sim/seeds.ts)`).toEqual([]);
}
