/**
 * Many waits on one signal (src/runtime/on-abort.ts): a client's lifetime signal carries
 * every sleep and bounded wait of the client, and Node warns past ten listeners on one
 * signal. Before on-abort.ts, the eleventh concurrent `recover()` or backoff printed
 * `MaxListenersExceededWarning`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { abortable } from '../../../src/runtime/abortable.js';
import { onAbort } from '../../../src/runtime/on-abort.js';
import { sleep } from '../../../src/runtime/sleep.js';

/** The `warning` events Node emits while `run` runs (emitted on the next tick, so awaited past one). */
async function warningsDuring(run: () => void): Promise<string[]> {
  const seen: string[] = [];
  const listener = (warning: Error): void => void seen.push(warning.name);
  process.on('warning', listener);
  try {
    run();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

afterEach(() => void vi.useRealTimers());

describe('one abort listener per signal', () => {
  it('fifty sleeps and fifty bounded waits on one signal: no listener warning, and the abort ends every one', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const stop = new AbortController();
    const never = new Promise<never>(() => undefined);
    let sleeps: Promise<boolean>[] = [];
    let waits: Promise<unknown>[] = [];
    const warnings = await warningsDuring(() => {
      sleeps = Array.from({ length: 50 }, () => sleep(60_000, stop.signal));
      waits = Array.from({ length: 50 }, () => abortable(never, stop.signal).catch((reason: unknown) => reason));
    });
    expect(warnings).toEqual([]);
    stop.abort(new Error('disposed'));
    expect(await Promise.all(sleeps)).toEqual(Array(50).fill(false));
    expect((await Promise.all(waits)).map((reason) => (reason as Error).message)).toEqual(Array(50).fill('disposed'));
  });

  it('a wait that ended is not called at the abort; the others still are, each once', () => {
    const stop = new AbortController();
    const calls: string[] = [];
    const stopFirst = onAbort(stop.signal, () => calls.push('first'));
    onAbort(stop.signal, () => calls.push('second'));
    stopFirst();
    stop.abort();
    stop.abort();
    expect(calls).toEqual(['second']);
  });

});
