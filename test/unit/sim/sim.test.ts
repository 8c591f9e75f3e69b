/**
 * The deterministic simulator in CI (test/sim/, docs/reliability.md "Simulator"), first part
 * of the seeds (sim-part-2..4.test.ts run the rest, shared by the two workers): each seed is a run of
 * several tabs of the real client against the simulated server, network, storage and tabs, with
 * faults at every port and every invariant checked after each step. A failure prints the one
 * command that replays it.
 */
import { describe, expect, it } from 'vitest';
import { runSeed } from '../../sim/run.js';
import { partRange, runRange } from './seeds.js';

const [from, to] = partRange(1);

describe('simulator', () => {
  it('replays a seed exactly: the same trace and end state twice', async () => {
    for (const seed of [3, 41, 777]) {
      const [first, second] = [await runSeed(seed), await runSeed(seed)];
      expect(second.trace).toEqual(first.trace);
      expect(second.digest).toEqual(first.digest);
    }
  });

  it(`holds every invariant on seeds ${from}..${to}`, { timeout: 600_000 }, () => runRange(from, to));
});
