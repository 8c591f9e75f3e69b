/**
 * The deterministic simulator in CI (test/sim/, docs/reliability.md "Simulator"): many
 * seeds, each a run of several tabs of the real client against the simulated server,
 * network, storage and tabs with faults at every port, every invariant checked after each
 * step. A failure prints the one command that replays it. `SIM_SEEDS` overrides the count.
 */
import { describe, expect, it } from 'vitest';
import { report, runSeed } from '../../sim/run.js';

const SEEDS = Number(process.env['SIM_SEEDS'] ?? 1000);
/** Seeds of the second half start here (the other file runs 1..SEEDS/2). */
export const FIRST = 1;

describe('simulator', () => {
  it('replays a seed exactly: the same trace and end state twice', async () => {
    for (const seed of [3, 41, 777]) {
      const [first, second] = [await runSeed(seed), await runSeed(seed)];
      expect(second.trace).toEqual(first.trace);
      expect(second.digest).toEqual(first.digest);
    }
  });

  it(`holds every invariant on seeds ${FIRST}..${FIRST + SEEDS / 2 - 1}`, { timeout: 600_000 }, async () => {
    const failures: string[] = [];
    for (let seed = FIRST; seed < FIRST + SEEDS / 2 && failures.length < 3; seed++) {
      const result = await runSeed(seed);
      if (!result.ok) failures.push(report(result));
    }
    expect(failures, failures.join('\n\n')).toEqual([]);
  });
});
