/**
 * The operator index on its own (src/server/log/operator-index.ts): a half-done write (a
 * crash between a turn's record and its index steps, each in its own slot on a cluster)
 * is invisible or repaired, never a wrong listing.
 */
import { describe, expect, it } from 'vitest';
import { OperatorIndex } from '../../../src/server/log/operator-index.js';
import { MemorySortedSets } from '../../../src/server/log/memory/sorted-sets.js';
import type { OperatorQuery, StoredTurn } from '../../../src/server/log/turn-log.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(T0 + ms).toISOString();

function liveTurn(id: string, principal = 'alice'): StoredTurn {
  return { id, conversationId: 'c1', messageId: `m-${id}`, status: 'streaming', lastSeq: 2, createdAt: iso(0), updatedAt: iso(0), content: 'x', principal, delivery: { state: 'pending' } };
}
const ended = (turn: StoredTurn, at: number, status: StoredTurn['status'] = 'complete'): StoredTurn => ({ ...turn, status, endedAt: iso(at), updatedAt: iso(at), lastSeq: 3 });

function setup() {
  let now = T0 + 1000;
  const records = new Map<string, StoredTurn>();
  const sets = new MemorySortedSets();
  const index = new OperatorIndex(sets, { retentionMs: 3_600_000, now: () => now });
  const reads: string[] = [];
  const resolve = async (id: string) => (reads.push(id), records.get(id));
  const list = (query: Partial<OperatorQuery> & Pick<OperatorQuery, 'state'>) =>
    index.list({ limit: 50, stuckAfterMs: 60_000, undeliveredAfterMs: 60_000, ...query }, resolve).then((turns) => turns.map((turn) => turn.id));
  return { records, sets, index, reads, list, advance: (ms: number) => (now += ms) };
}

describe('operator index', () => {
  it('an entry added before a change that never happened is invisible, and removed', async () => {
    const { records, index, list, sets, advance } = setup();
    const turn = liveTurn('t1');
    records.set('t1', turn);
    await index.settle(turn);
    // Step one of ending it ran, then the instance died: the record is still live.
    await index.enter(ended(turn, 500));
    advance(120_000);
    expect(await list({ state: 'undelivered' })).toEqual([]);
    expect(await sets.range('ended:all', -Infinity, Infinity, 0, 10)).toEqual([]);
    expect(await list({ state: 'live' })).toEqual(['t1']);
  });

  it('a change whose index steps never ran is repaired by the next listing that meets it', async () => {
    const { records, index, list, advance } = setup();
    const turn = liveTurn('t2');
    await index.settle(turn);
    // The record ended (another instance, a lapsed lease) and nothing told the index.
    records.set('t2', ended(turn, 500, 'failed'));
    advance(120_000);
    expect(await list({ state: 'live' })).toEqual([]);
    expect(await list({ state: 'failed' })).toEqual(['t2']);
    expect(await list({ state: 'undelivered' })).toEqual(['t2']);
  });

  it('skips an entry whose record is being created, drops one whose create failed long ago', async () => {
    const { index, list, sets, advance } = setup();
    await index.enter({ ...liveTurn('t3'), createdAt: iso(1000) });
    expect(await list({ state: 'live' })).toEqual([]);
    expect(await sets.range('live:all', -Infinity, Infinity, 0, 10)).toHaveLength(1);
    advance(120_000);
    expect(await list({ state: 'live' })).toEqual([]);
    expect(await sets.range('live:all', -Infinity, Infinity, 0, 10)).toEqual([]);
  });

  it("reads only the listed principal's entries, however many others there are", async () => {
    const { records, index, list, reads, advance } = setup();
    for (let i = 0; i < 2000; i++) {
      const turn = ended(liveTurn(`o${i}`, `user-${i % 17}`), 100);
      records.set(turn.id, turn);
      await index.settle(turn);
    }
    const mine = ended(liveTurn('mine'), 200);
    records.set('mine', mine);
    await index.settle(mine);
    advance(120_000);
    expect(await list({ state: 'undelivered', principal: 'alice' })).toEqual(['mine']);
    expect(reads).toEqual(['mine']);
  });
});
