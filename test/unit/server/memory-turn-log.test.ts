import { afterEach, describe, expect, it, vi } from 'vitest';
import { turnEventSchema } from '../../../src/protocol/schemas.js';
import { createMemoryTurnLog, type MemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { isExpiredTurn } from '../../../src/server/log/turn-log.js';

const HASH = '0'.repeat(64);
const logs: MemoryTurnLog[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const log of logs.splice(0)) await log.close();
});

function makeLog(options: Parameters<typeof createMemoryTurnLog>[0] = {}): MemoryTurnLog {
  const log = createMemoryTurnLog(options);
  logs.push(log);
  return log;
}

async function newTurn(log: MemoryTurnLog, id = 't1', conversationId = 'c1', principal = 'p1'): Promise<void> {
  await log.createTurn({ id, conversationId, messageId: `m-${id}`, principal, content: 'hi', createdAt: new Date(0).toISOString() });
}

async function endTurn(log: MemoryTurnLog, id = 't1'): Promise<void> {
  await log.append(id, { type: 'turn.end', status: 'complete', textLength: 0, textSha256: HASH });
}

describe('memory turn log', () => {
  it('numbers events 1..N, returns protocol-valid objects, pages them, and updates status', async () => {
    const log = makeLog();
    await newTurn(log);
    expect(await log.getTurn('t1')).toMatchObject({ status: 'pending', lastSeq: 0 });
    await log.append('t1', { type: 'turn.start', messageId: 'm-t1', conversationId: 'c1', createdAt: 'x' });
    const output = { list: [1, 2] };
    await log.append('t1', { type: 'action', callId: 'c', name: 'n', status: 'completed', output });
    output.list.push(3); // the log kept its own copy
    for (const text of ['a', '', 'b']) await log.append('t1', { type: 'delta', text });
    expect(await log.getTurn('t1')).toMatchObject({ status: 'streaming', lastSeq: 5 });
    await endTurn(log);
    const turn = await log.getTurn('t1');
    expect(turn).toMatchObject({ status: 'complete', lastSeq: 6 });
    expect(turn !== undefined && !isExpiredTurn(turn) && turn.endedAt).toBeTruthy();

    const all = await log.read('t1', 0, 100);
    expect(all.hasMore).toBe(false);
    expect(all.events.map((event) => turnEventSchema.parse(event).seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(all.events[1]).toEqual({ turnId: 't1', seq: 2, type: 'action', callId: 'c', name: 'n', status: 'completed', output: { list: [1, 2] } });
    expect(all.events[3]).toEqual({ turnId: 't1', seq: 4, type: 'delta', text: '' });
    expect(Object.keys(all.events[2] ?? {})).toEqual(['turnId', 'seq', 'type', 'text']);
    expect(await log.read('t1', 2, 2)).toMatchObject({ events: [{ seq: 3 }, { seq: 4 }], hasMore: true });
    expect(await log.read('t1', 4, 2)).toMatchObject({ events: [{ seq: 5 }, { seq: 6 }], hasMore: false });
    expect(await log.read('t1', 6, 2)).toEqual({ events: [], hasMore: false });
    expect(await log.read('unknown', 0, 2)).toEqual({ events: [], hasMore: false });
  });

  it('refuses appends after turn.end and to unknown turns, and duplicate turn ids', async () => {
    const log = makeLog();
    await newTurn(log);
    await endTurn(log);
    await expect(log.append('t1', { type: 'delta', text: 'late' })).rejects.toThrow(/ended/);
    await expect(log.append('nope', { type: 'delta', text: 'x' })).rejects.toThrow(/unknown/);
    await expect(newTurn(log)).rejects.toThrow(/exists/);
    expect(await log.getTurn('t1')).toMatchObject({ lastSeq: 1, status: 'complete' });
  });

  it('wakes waiters on append, on end, on abort and on timeout, and forgets them', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const log = makeLog();
    await newTurn(log);
    const never = new AbortController().signal;
    // Already satisfied: at once.
    await log.append('t1', { type: 'delta', text: 'a' });
    await log.waitForEvents('t1', 0, { signal: never, timeoutMs: 1e9 });

    let woken = false;
    const onAppend = log.waitForEvents('t1', 1, { signal: never, timeoutMs: 1e9 }).then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    await log.append('t1', { type: 'delta', text: 'b' });
    await onAppend;

    const abort = new AbortController();
    const onAbort = log.waitForEvents('t1', 2, { signal: abort.signal, timeoutMs: 1e9 });
    abort.abort();
    await onAbort;

    let timedOut = false;
    const onTimeout = log.waitForEvents('t1', 2, { signal: never, timeoutMs: 5000 }).then(() => (timedOut = true));
    await vi.advanceTimersByTimeAsync(4999);
    expect(timedOut).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await onTimeout;

    const onEnd = log.waitForEvents('t1', 2, { signal: never, timeoutMs: 1e9 });
    await endTurn(log);
    await onEnd;
    // Ended: every later wait resolves at once, as does one on an unknown turn.
    await log.waitForEvents('t1', 3, { signal: never, timeoutMs: 1e9 });
    await log.waitForEvents('nope', 0, { signal: never, timeoutMs: 1e9 });
    expect(vi.getTimerCount()).toBe(1); // only the sweep interval is left
  });

  it('expires ended turns after retention: expired from a tombstone, then unknown; keys go with them', async () => {
    let clock = 1_000_000;
    const log = makeLog({ retentionMs: 1000, now: () => clock });
    await newTurn(log, 'old');
    await newTurn(log, 'live');
    await log.putIdempotencyIfAbsent('p1', 'key-old', { fingerprint: 'f', state: 'in_flight', createdAt: 'x' });
    await log.completeIdempotency('p1', 'key-old', { fingerprint: 'f', state: 'done', turnId: 'old', messageId: 'm', conversationId: 'c1', createdAt: 'x' });
    await log.putIdempotencyIfAbsent('p1', 'key-live', { fingerprint: 'f', state: 'done', turnId: 'live', messageId: 'm', conversationId: 'c1', createdAt: 'x' });
    await endTurn(log, 'old');
    clock += 999;
    log.sweep();
    expect(await log.getTurn('old')).toMatchObject({ id: 'old' });
    expect(await log.getIdempotency('p1', 'key-old')).toMatchObject({ turnId: 'old' });
    clock += 1;
    expect(await log.getTurn('old')).toEqual({ expired: true, principal: 'p1' });
    expect(await log.read('old', 0, 10)).toEqual({ events: [], hasMore: false });
    expect((await log.listTurns('c1', 'p1', 10)).map((turn) => turn.id)).toEqual(['live']);
    log.sweep();
    expect(await log.getIdempotency('p1', 'key-old')).toBeUndefined();
    // A live turn never expires, nor does its key.
    clock += 10_000_000;
    log.sweep();
    expect(await log.getTurn('live')).toMatchObject({ status: 'pending' });
    expect(await log.getIdempotency('p1', 'key-live')).toMatchObject({ turnId: 'live' });
    // The tombstone lasted one more retention period.
    expect(await log.getTurn('old')).toBeUndefined();
  });

  it('sweeps on its own interval', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const log = makeLog({ retentionMs: 1000, sweepIntervalMs: 500 });
    await newTurn(log);
    await log.putIdempotencyIfAbsent('p1', 'k', { fingerprint: 'f', state: 'done', turnId: 't1', messageId: 'm', conversationId: 'c1', createdAt: 'x' });
    await endTurn(log);
    await vi.advanceTimersByTimeAsync(1500);
    // Swept by the timer: the key is gone without anyone asking for the turn.
    expect(await log.getIdempotency('p1', 'k')).toBeUndefined();
    expect(await log.getTurn('t1')).toEqual({ expired: true, principal: 'p1' });
  });

  it('drops an in_flight key whose request never completed after one retention period', async () => {
    let clock = 0;
    const log = makeLog({ retentionMs: 100, now: () => clock });
    await log.putIdempotencyIfAbsent('p1', 'k', { fingerprint: 'f', state: 'in_flight', createdAt: 'x' });
    clock = 99;
    log.sweep();
    expect(await log.getIdempotency('p1', 'k')).toMatchObject({ state: 'in_flight' });
    clock = 100;
    log.sweep();
    expect(await log.getIdempotency('p1', 'k')).toBeUndefined();
  });

  it('keeps idempotency records per principal, first writer wins', async () => {
    const log = makeLog();
    const record = { fingerprint: 'f1', state: 'in_flight' as const, createdAt: 'x' };
    expect(await log.putIdempotencyIfAbsent('a', 'k', record)).toBeUndefined();
    expect(await log.putIdempotencyIfAbsent('a', 'k', { ...record, fingerprint: 'f2' })).toMatchObject({ fingerprint: 'f1' });
    expect(await log.putIdempotencyIfAbsent('b', 'k', { ...record, fingerprint: 'f3' })).toBeUndefined();
    await log.deleteIdempotency('a', 'k');
    expect(await log.getIdempotency('a', 'k')).toBeUndefined();
    expect(await log.getIdempotency('b', 'k')).toMatchObject({ fingerprint: 'f3' });
  });

  it('lists per principal, newest first, and records cancel requests', async () => {
    const log = makeLog();
    await newTurn(log, 't1', 'c1', 'alice');
    await newTurn(log, 't2', 'c1', 'bob');
    await newTurn(log, 't3', 'c1', 'alice');
    expect((await log.listTurns('c1', 'alice', 10)).map((turn) => turn.id)).toEqual(['t3', 't1']);
    expect((await log.listTurns('c1', 'alice', 1)).map((turn) => turn.id)).toEqual(['t3']);
    expect(await log.listTurns('c2', 'alice', 10)).toEqual([]);
    expect(await log.isCancelRequested('t1')).toBe(false);
    await log.requestCancel('t1');
    expect(await log.isCancelRequested('t1')).toBe(true);
    expect(await log.isCancelRequested('t3')).toBe(false);
  });

  it("lists one principal's conversation without visiting another principal's turns in it", async () => {
    const log = makeLog();
    for (const id of ['a1', 'a2', 'a3']) await newTurn(log, id, 'shared', 'alice');
    /** Map lookups made while alice's listing runs (its body is synchronous; the spy sees nothing else). */
    const lookupsOfListing = async (): Promise<{ ids: string[]; lookups: number }> => {
      const spy = vi.spyOn(Map.prototype, 'get');
      const listing = log.listTurns('shared', 'alice', 50);
      const lookups = spy.mock.calls.length;
      spy.mockRestore();
      return { ids: (await listing).map((turn) => turn.id), lookups };
    };
    for (let i = 0; i < 5; i++) await newTurn(log, `b${i}`, 'shared', 'bob');
    const few = await lookupsOfListing();
    for (let i = 5; i < 2000; i++) await newTurn(log, `b${i}`, 'shared', 'bob');
    const many = await lookupsOfListing();
    expect(many.ids).toEqual(['a3', 'a2', 'a1']);
    expect(few.ids).toEqual(many.ids);
    // The work depends on alice's turns only: 2000 of bob's in the same conversation cost nothing.
    expect(many.lookups).toBe(few.lookups);
    expect(many.lookups).toBeLessThan(10);
  });

  it('releases pending waiters on close', async () => {
    const log = makeLog();
    await newTurn(log);
    const waiting = log.waitForEvents('t1', 0, { signal: new AbortController().signal, timeoutMs: 1e9 });
    await log.close();
    await waiting;
  });
});
