/**
 * Issue 23, H3 and P1: the stall watchdog measures silence on the monotonic clock, so a
 * wall clock set back or forward during a stall changes nothing; and a watchdog longer than
 * one platform timer holds (2^31 − 1 ms: `Infinity`, 30 days, `Lifeline-Heartbeat:
 * 900000000`) is waited in steps, never a timer that fires at once and re-arms (a spin).
 * Timers, Date and performance are faked; the network is real.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { follow, type Followed } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';
import type { LifelineOptions } from '../../../src/types.js';

let cleanup: (() => Promise<void> | void)[] = [];
beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] }));
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** A turn whose stream sends its start and one delta, then stays open and silent. */
async function silentStream(headers: Record<string, string> = {}, options: Partial<LifelineOptions> = {}): Promise<Followed> {
  const log = await buildLog(['before the silence']);
  const server = await startScriptedServer({
    log,
    stream: ({ res }: { res: ServerResponse }) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
      res.write(sse(log[0]!) + sse(log[1]!));
    },
  });
  cleanup.push(() => server.close());
  const followed = follow(server.baseUrl, TURN, options);
  cleanup.push(() => followed.client.dispose());
  // Real I/O under fake timers: advance in small steps until the delta is applied.
  while (followed.turn.getSnapshot().text !== 'before the silence') await vi.advanceTimersByTimeAsync(5);
  return followed;
}

/** How many timers the client sets while `ms` of virtual time pass. */
async function timersSetDuring(ms: number): Promise<number> {
  const set = vi.spyOn(globalThis, 'setTimeout');
  await vi.advanceTimersByTimeAsync(ms);
  const count = set.mock.calls.length;
  set.mockRestore();
  return count;
}

describe('H3: silence is measured on the monotonic clock', () => {
  const stall = { firstEventMs: 15_000, idleMs: 25_000 };

  it('a wall clock set back an hour during a stall: the stall is noticed on time, silentMs is the real silence', async () => {
    const followed = await silentStream({}, { stall });
    await vi.advanceTimersByTimeAsync(10_000);
    vi.setSystemTime(Date.now() - 3_600_000);
    await vi.advanceTimersByTimeAsync(15_100);
    const [stalled] = followed.ofType('stalled');
    expect(stalled).toEqual(expect.objectContaining({ watchdog: 'idle' }));
    expect(stalled!.silentMs).toBeGreaterThanOrEqual(stall.idleMs);
    expect(stalled!.silentMs).toBeLessThan(stall.idleMs + 1_000);
  });

  it('a wall clock set forward an hour: no early stall, and silentMs is not the jump', async () => {
    const followed = await silentStream({}, { stall });
    await vi.advanceTimersByTimeAsync(10_000);
    vi.setSystemTime(Date.now() + 3_600_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(followed.ofType('stalled')).toEqual([]);
    await vi.advanceTimersByTimeAsync(10_100);
    const [stalled] = followed.ofType('stalled');
    expect(stalled!.silentMs).toBeGreaterThanOrEqual(stall.idleMs);
    expect(stalled!.silentMs).toBeLessThan(stall.idleMs + 1_000);
  });
});

describe('P1: a watchdog past 2^31 − 1 ms never spins', () => {
  it.each([
    ['Lifeline-Heartbeat: 900000000 (sized to 30 s at most)', { 'lifeline-heartbeat': '900000000' }, {}],
    ['stall.idleMs = Infinity', {}, { stall: { idleMs: Infinity, firstEventMs: Infinity } }],
    ['stall.idleMs = 30 days', {}, { stall: { idleMs: 30 * 864e5, firstEventMs: 30 * 864e5 } }],
  ] as const)('%s: a handful of timers per virtual second, and no stall', async (_, headers, options) => {
    const followed = await silentStream(headers, options as Partial<LifelineOptions>);
    // Today's overflowing setTimeout fires after 1 ms and re-arms: about a thousand a second.
    expect(await timersSetDuring(1_000)).toBeLessThanOrEqual(5);
    expect(await timersSetDuring(60_000)).toBeLessThanOrEqual(5);
    expect(followed.ofType('stalled')).toEqual([]);
    expect(followed.turn.getSnapshot().status).toBe('streaming');
  });
});

describe('a hostile Lifeline-Heartbeat cannot hide a silent stall', () => {
  it('announced as 900000000 ms: the silence is still noticed, after 2.5 × 30 s at most', async () => {
    const followed = await silentStream({ 'lifeline-heartbeat': '900000000' });
    await vi.advanceTimersByTimeAsync(74_000);
    expect(followed.ofType('stalled')).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000);
    const [stalled] = followed.ofType('stalled');
    expect(stalled).toEqual(expect.objectContaining({ watchdog: 'idle' }));
    expect(stalled!.silentMs).toBeGreaterThanOrEqual(75_000);
  });
});
