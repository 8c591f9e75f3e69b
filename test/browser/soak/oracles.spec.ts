/**
 * The soak's oracles and schedule, without a browser: each oracle must catch the fault
 * it exists for, and the schedule must be a pure function of its seed.
 */
import { expect, test } from '@playwright/test';
import { canonicalJson, checkJ0, checkX1, type FollowRecord } from '../../../bench/soak/oracles.js';
import { createSchedule, scheduleHash } from '../../../bench/soak/schedule.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';

const turnId = 'turn-1';
const log: TurnEvent[] = [
  { turnId, seq: 1, type: 'turn.start', messageId: 'm', conversationId: 'c', createdAt: '2025-01-01T00:00:00.000Z' },
  { turnId, seq: 2, type: 'delta', text: 'Hel' },
  { turnId, seq: 3, type: 'delta', text: 'lo 🙂' },
  { turnId, seq: 4, type: 'delta', text: '!' },
  { turnId, seq: 5, type: 'turn.end', status: 'complete', textLength: 7, textSha256: '0'.repeat(64) },
];

function applied(seq: number, session = 1, tab = 'A'): FollowRecord {
  return { k: 'applied', tab, session, turnId, seq, event: canonicalJson(log[seq - 1]) };
}
function attach(baseline: number, session = 1, tab = 'A'): FollowRecord {
  return { k: 'attach', tab, session, turnId, baseline };
}

test('J0 passes a clean log, a resumed reload and a jump from storage', () => {
  expect(checkJ0(log, [attach(0), ...[1, 2, 3, 4, 5].map((seq) => applied(seq))], 'A')).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0, unexpected: 0 });
  // Reloaded after seq 2 was stored: the next page load starts from storage.
  expect(checkJ0(log, [attach(0), applied(1), applied(2), applied(3), attach(2, 2), applied(3, 2), applied(4, 2), applied(5, 2)], 'A')).toMatchObject({
    lost: 0,
    duplicated: 0,
  });
  // Another tab stored seq 1..3 while this one followed from 0.
  expect(checkJ0(log, [attach(0), { k: 'restored', tab: 'A', session: 1, turnId, seq: 3 }, applied(4), applied(5)], 'A').lost).toBe(0);
});

test('J0 counts duplicates, losses, late events and foreign content', () => {
  expect(checkJ0(log, [attach(0), applied(1), applied(2), applied(2), applied(3), applied(4), applied(5)], 'A').duplicated).toBe(1);
  expect(checkJ0(log, [attach(0), applied(1), applied(3), applied(4), applied(5)], 'A').lost).toBe(1);
  const late = checkJ0(log, [attach(0), applied(1), applied(3), applied(2), applied(4), applied(5)], 'A');
  expect(late).toMatchObject({ lost: 0, outOfOrder: 1 });
  const forged: FollowRecord = { ...(applied(3) as FollowRecord & { k: 'applied' }), event: canonicalJson({ ...log[2], text: 'lo 🙃' }) };
  expect(checkJ0(log, [attach(0), applied(1), applied(2), forged, applied(4), applied(5)], 'A').unexpected).toBe(1);
  // The primary tab never reached the end (a second tab did): the rest is lost.
  expect(checkJ0(log, [attach(0), applied(1), applied(2), attach(0, 1, 'B1'), ...[1, 2, 3, 4, 5].map((seq) => applied(seq, 1, 'B1'))], 'A').lost).toBe(3);
});

test('X1 finds a submission that took effect twice, one that never did, and a key reused for two turns', () => {
  expect(checkX1(new Map([[0, ['t0']], [1, ['t1']]]), new Map([['k0', new Set(['t0'])]]), [0, 1])).toMatchObject({ doubleEffect: 0, missing: 0 });
  expect(checkX1(new Map([[0, ['t0', 't0b']]]), new Map(), [0, 1])).toMatchObject({ doubleEffect: 1, missing: 1 });
  expect(checkX1(new Map([[0, ['t0']]]), new Map([['k0', new Set(['t0', 't9'])]]), [0]).doubleEffect).toBe(1);
});

test('the fault schedule is a pure function of the seed', () => {
  const a = createSchedule({ seed: 7, turns: 20, faults: 100 });
  expect(scheduleHash(createSchedule({ seed: 7, turns: 20, faults: 100 }))).toBe(scheduleHash(a));
  expect(scheduleHash(createSchedule({ seed: 8, turns: 20, faults: 100 }))).not.toBe(scheduleHash(a));
  expect(a.faults).toHaveLength(100);
  expect(new Set(a.faults.map((fault) => fault.kind)).size).toBeGreaterThanOrEqual(10);
  for (const fault of a.faults) expect(a.turns[fault.turn]!.faults).toContain(fault.id);
});
