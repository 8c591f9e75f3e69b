/** The one abortable wait (src/runtime/sleep.ts), on a fake clock. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../../src/runtime/sleep.js';

beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
afterEach(() => void vi.useRealTimers());

/** The promise's outcome so far: `'pending'`, or what it resolved with. */
async function state(promise: Promise<boolean>): Promise<boolean | 'pending'> {
  return Promise.race([promise, Promise.resolve('pending' as const)]);
}

describe('sleep', () => {
  it('resolves true once the time has passed, not before', async () => {
    const slept = sleep(1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(await state(slept)).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(await state(slept)).toBe(true);
  });

  it('resolves false as soon as its signal aborts (at once when it already has), leaving no timer behind', async () => {
    const stop = new AbortController();
    const slept = sleep(60_000, stop.signal);
    stop.abort();
    expect(await state(slept)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    expect(await sleep(10, stop.signal)).toBe(false);
  });

  it('Infinity waits for the signal alone; a delay longer than one timer holds is waited in full', async () => {
    const stop = new AbortController();
    const forever = sleep(Infinity, stop.signal);
    const long = sleep(2 ** 31 + 1_000);
    await vi.advanceTimersByTimeAsync(2 ** 31);
    expect([await state(forever), await state(long)]).toEqual(['pending', 'pending']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await state(long)).toBe(true);
    stop.abort();
    expect(await state(forever)).toBe(false);
  });
});
