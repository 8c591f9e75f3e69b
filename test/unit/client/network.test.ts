/**
 * FAULTS row 18: offline, then online. No request while the browser says offline;
 * the retry goes out at once on `online`, without waiting for a backoff timer.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';

const scope = globalThis as unknown as {
  addEventListener?: EventTarget['addEventListener'];
  removeEventListener?: EventTarget['removeEventListener'];
  navigator?: { onLine: boolean };
};
let target: EventTarget;
let cleanup: (() => Promise<void> | void)[] = [];

beforeEach(() => {
  target = new EventTarget();
  scope.addEventListener = target.addEventListener.bind(target);
  scope.removeEventListener = target.removeEventListener.bind(target);
  Object.defineProperty(globalThis, 'navigator', { value: { onLine: true }, configurable: true, writable: true });
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
});

afterEach(async () => {
  vi.useRealTimers();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
  delete scope.addEventListener;
  delete scope.removeEventListener;
  delete scope.navigator;
});

function setOnline(online: boolean): void {
  scope.navigator!.onLine = online;
  target.dispatchEvent(new Event(online ? 'online' : 'offline'));
}

describe('offline and online (row 18)', () => {
  it('sends nothing while offline and resumes at once on online', async () => {
    const log = await buildLog(['Hel', 'lo ', '世界']);
    let first: ServerResponse | undefined;
    const server = await startScriptedServer({
      log,
      stream: ({ index, res }) => {
        if (index > 0) return 'default';
        first = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(log.slice(0, 2).map(sse).join(''));
        return undefined;
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(2);

    setOnline(false);
    first?.end();
    await vi.advanceTimersByTimeAsync(100);
    await expect.poll(() => followed.turn.getSnapshot().connection.state).toBe('offline');
    await vi.advanceTimersByTimeAsync(120_000);
    expect(server.requests).toHaveLength(1);
    expect(followed.ofType('stalled')).toEqual([]);

    setOnline(true);
    // No timer is advanced from here: the retry must not wait for one.
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe('Hello 世界');
    expect(followed.applied).toEqual(range(log.length));
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, '2']);
    expect(followed.ofType('network').map((d) => d.online)).toEqual([false, true]);
  });

  it('waits for online before the very first request', async () => {
    scope.navigator!.onLine = false;
    const log = await buildLog(['ok']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().connection.state).toBe('offline');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(0);
    setOnline(true);
    expect((await followed.turn.completed).text).toBe('ok');
  });
});
