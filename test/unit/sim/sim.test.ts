/**
 * The deterministic simulator in CI (test/sim/, docs/reliability.md "Simulator"), first half
 * of the seeds (sim-second-half.test.ts runs the rest on the other core): each seed is a run of
 * several tabs of the real client against the simulated server, network, storage and tabs, with
 * faults at every port and every invariant checked after each step. A failure prints the one
 * command that replays it.
 */
import { describe, expect, it } from 'vitest';
import { runSeed } from '../../sim/run.js';
import { runRange, SEEDS } from './seeds.js';

describe('simulator', () => {
  it('replays a seed exactly: the same trace and end state twice', async () => {
    for (const seed of [3, 41, 777]) {
      const [first, second] = [await runSeed(seed), await runSeed(seed)];
      expect(second.trace).toEqual(first.trace);
      expect(second.digest).toEqual(first.digest);
    }
  });

  it(`holds every invariant on seeds 1..${SEEDS / 2}`, { timeout: 600_000 }, () => runRange(1, SEEDS / 2));
});
