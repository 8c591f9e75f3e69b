/**
 * The four hangs of the closure follower (issue 15, FAULTS rows 36–37), and its smaller
 * defects, each against a scripted server; each asserts the outcome, not a log line.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_RETRY, follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN, writeReplayPage } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const overloaded = (res: ServerResponse): void => {
  res.writeHead(503, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code: 'overloaded', message: 'scripted' } }));
};

/** A promise that never settles, and a count of how often it was handed out. */
function never(): { promise: () => Promise<never>; count: () => number } {
  let count = 0;
  return { promise: () => (count++, new Promise<never>(() => {})), count: () => count };
}

describe('hangs the machine rules out', () => {
  it('a revived turn gets a fresh retry budget: the first 503 after revive is retried, and completed resolves again (row 37)', async () => {
    const log = await buildLog(['re', 'vived']);
    let down = true;
    let afterRevive = 0;
    const server = await startScriptedServer({
      log,
      stream: ({ res }) => (down ? overloaded(res) : 'default'),
      replay: ({ res }) => {
        if (down) return overloaded(res);
        // The first replay after the revive fails once more: it must be retried, not final.
        if (afterRevive++ === 0) return overloaded(res);
        return 'default';
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { retry: { ...FAST_RETRY, maxElapsedMs: 150 } });
    cleanup.push(() => followed.client.dispose());
    const givenUp = await followed.turn.completed;
    expect(givenUp.status).toBe('failed');
    expect(givenUp.error?.code).toBe('retry_exhausted');

    down = false;
    const [recovered] = await followed.client.recover('conv_1');
    expect(recovered).toMatchObject({ status: 'complete', text: 'revived' });
    // A fresh promise for the revived turn, resolved by its real end.
    await expect(followed.turn.completed).resolves.toMatchObject({ status: 'complete', text: 'revived' });
    expect(afterRevive).toBe(2);
  });

  it('a headers() promise that never settles is a stall: bounded by the watchdog, then the turn recovers (row 36)', async () => {
    const log = await buildLog(['a', 'b', 'c']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const hang = never();
    let calls = 0;
    const followed = follow(server.baseUrl, TURN, {
      stall: { firstEventMs: 400, idleMs: 400 },
      // The first token refresh never answers; later ones do.
      headers: () => (calls++ === 0 ? hang.promise() : { authorization: 'Bearer ok' }),
    });
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final).toMatchObject({ status: 'complete', text: 'abc' });
    expect(hang.count()).toBe(1);
    expect(followed.ofType('stalled').length).toBeGreaterThanOrEqual(1);
    expect(followed.applied).toEqual(range(log.length));
  });

  it('a headers() that never settles again and again ends the turn failed within the retry budget, not reconnecting forever (row 36)', async () => {
    const log = await buildLog(['x']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const hang = never();
    const followed = follow(server.baseUrl, TURN, {
      stall: { firstEventMs: 40, idleMs: 40 },
      retry: { ...FAST_RETRY, maxElapsedMs: 300 },
      headers: hang.promise,
    });
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('retry_exhausted');
    expect(server.requests).toEqual([]);
    // Bounded: a few attempts within 300 ms, not a storm.
    expect(hang.count()).toBeLessThan(40);
  });

  it('recover() next to a healthy stream does not hang on a replay that never answers, and a later recover() replays again (row 36)', async () => {
    const log = await buildLog(['one ', 'two ', 'three']);
    const live = log.slice(0, 3);
    let stream: ServerResponse | undefined;
    const server = await startScriptedServer({
      log,
      stream: ({ res, after }) => {
        // Healthy and live: the events so far, then heartbeats only (the turn goes on).
        stream = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(live.filter((event) => event.seq > after).map(sse).join(''));
        return undefined;
      },
      // The first replay request never answers; later ones show the live turn as it is.
      replay: ({ index, res, after }) => (index === 0 ? new Promise<never>(() => {}) : writeReplayPage(res, live, after)),
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { stall: { firstEventMs: 300, idleMs: 300 }, retry: FAST_RETRY });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(3);
    const beat = setInterval(() => stream?.write('event: heartbeat\ndata: {}\n\n'), 20);
    cleanup.push(() => clearInterval(beat));

    // The alongside replay hangs; its own timer hands it to the main loop, which asks the log again.
    const first = await followed.client.recover('conv_1');
    expect(first[0]).toMatchObject({ lastSeq: 3, text: 'one two ' });
    const replays = server.replays.length;
    expect(replays).toBeGreaterThanOrEqual(2);
    // Nothing is left marked as running: the next recover() asks the log again.
    await followed.client.recover('conv_1');
    expect(server.replays.length).toBeGreaterThan(replays);

    clearInterval(beat);
    stream?.end(log.slice(3).map(sse).join(''));
    const final = await followed.turn.completed;
    expect(final).toMatchObject({ status: 'complete', text: 'one two three' });
    expect(followed.applied).toEqual(range(log.length));
  });

  it('a replay that hangs every time gives up within maxElapsedMs instead of replaying forever (row 36)', async () => {
    const log = await buildLog(['never']);
    const server = await startScriptedServer({
      log,
      // Ended with nothing after the cursor: the log must be asked, and it never answers.
      stream: ({ res }) => void res.writeHead(204).end(),
      replay: () => new Promise<never>(() => {}),
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { stall: { firstEventMs: 30, idleMs: 30 }, retry: { ...FAST_RETRY, maxElapsedMs: 300 } });
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('retry_exhausted');
    // Each hang was counted: a handful of replays, not dozens.
    expect(server.replays.length).toBeLessThan(20);
    expect(followed.ofType('retry').every((d) => d.scope === 'replay')).toBe(true);
  });

  it('an app listener that throws is reported, never retried as a network error (row 38)', async () => {
    const log = await buildLog(['steady']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, {
      onDiagnostic: () => {
        throw new Error('app bug');
      },
    });
    cleanup.push(() => followed.client.dispose());
    const stop = followed.turn.subscribe(() => {
      throw new Error('app bug in a listener');
    });
    cleanup.push(stop);
    const final = await followed.turn.completed;
    expect(final).toMatchObject({ status: 'complete', text: 'steady' });
    expect(followed.ofType('retry')).toEqual([]);
    expect(server.streams).toHaveLength(1);
  });
});
