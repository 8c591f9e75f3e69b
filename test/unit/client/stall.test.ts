/**
 * Stall detection and replay (issue 5; FAULTS rows 2, 15, 16, 17) with controlled
 * timers: only the timer functions and Date are faked, the network is real. Tests
 * advance the clock past a watchdog, then wait on conditions for the real I/O.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { controlledAgent, PERSONAS } from '../../fixtures/agents.js';
import { isStreamRequest, startFaultProxy } from '../../fixtures/fault-proxy.js';
import { replayAll, startTestServer, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { countingFetch, follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';

const STALL = { firstEventMs: 15_000, idleMs: 25_000 };

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function fakeTimers(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
}

/** Reference server with a hand-driven agent behind the fault proxy; records every request the server sees. */
async function rig() {
  const agent = controlledAgent();
  const server = await startTestServer({ agent: agent.agent });
  const proxy = await startFaultProxy({ targetPort: (server.server.address() as AddressInfo).port });
  cleanup.push(() => server.close(), () => proxy.close());
  const answer = await submitMessage(server.baseUrl, 'conv_stall', 'go');
  const control = await agent.nextTurn();
  /** The client's replay requests (they go through the proxy; the test's own checks do not). */
  const replays = () => proxy.requests.filter((request) => request.path.startsWith(`/api/turns/${answer.turnId}?`));
  return { server, proxy, answer, control, replays };
}

describe('stall watchdogs', () => {
  beforeEach(fakeTimers);

  it('accepted, then silence: the first-event watchdog fires, one replay brings the whole turn (row 16)', async () => {
    const { server, proxy, answer, control, replays } = await rig();
    proxy.setPlan((request) => (isStreamRequest(request) ? { kind: 'stall' } : { kind: 'pass' }));
    const followed = follow(`${proxy.origin}/api`, answer.turnId, { stall: STALL });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => proxy.requests.filter(isStreamRequest).length).toBe(1);

    // The server finishes the turn, JSON action output included, while the stream is a black hole.
    await control.action({ callId: 'call_1', name: 'propose_personas', status: 'started', input: { count: 3 } });
    await control.action({ callId: 'call_1', name: 'propose_personas', status: 'completed', output: PERSONAS });
    await control.delta('Three personas 😀 ');
    await control.delta('to test with.');
    await control.end();
    await waitForTurnEnd(server.log, answer.turnId);
    expect(followed.turn.getSnapshot().status).toBe('pending');

    // expect.poll moves fake time by its interval, so the window is checked from the diagnostics' own clock.
    await vi.advanceTimersByTimeAsync(STALL.firstEventMs);
    const [stalled] = followed.ofType('stalled');
    const connectedAt = followed.ofType('connect')[0]!.at;
    expect(stalled).toEqual(expect.objectContaining({ watchdog: 'first-event' }));
    expect(stalled!.at - connectedAt).toBeGreaterThanOrEqual(STALL.firstEventMs);
    expect(stalled!.at - connectedAt).toBeLessThan(STALL.firstEventMs + 1_000);
    expect(stalled!.silentMs).toBeGreaterThanOrEqual(STALL.firstEventMs);

    const final = await followed.turn.completed;
    await followed.iterated;
    const { events } = await replayAll(server.baseUrl, answer.turnId);
    expect(final.status).toBe('complete');
    expect(final.text).toBe(textOf(events));
    expect(final.actions).toEqual([expect.objectContaining({ callId: 'call_1', status: 'completed', input: { count: 3 }, output: PERSONAS })]);
    expect(followed.applied).toEqual(range(events.length));
    expect(replays()).toHaveLength(1);
    expect(final.recovered).toEqual(expect.objectContaining({ path: 'replay', events: events.length }));
    expect(final.stall).toEqual(expect.objectContaining({ watchdog: 'first-event' }));
  });

  it('silence mid-turn: replays, then reconnects with Last-Event-ID while the turn is live', async () => {
    const { server, proxy, answer, control, replays } = await rig();
    const followed = follow(`${proxy.origin}/api`, answer.turnId, { stall: STALL });
    cleanup.push(() => followed.client.dispose());
    await control.delta('one ');
    await control.delta('two ');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('one two ');
    expect(proxy.stallWhere(isStreamRequest)).toBe(1);
    await control.delta('three ');

    await vi.advanceTimersByTimeAsync(STALL.idleMs);
    expect(followed.ofType('stalled')).toEqual([expect.objectContaining({ watchdog: 'idle' })]);
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('one two three ');
    // Live: back to the stream, resuming after what the replay applied (start + 3 deltas).
    await expect.poll(() => proxy.requests.filter(isStreamRequest).map((request) => request.headers['last-event-id'])).toEqual([undefined, '4']);
    await control.delta('four');
    await control.end();

    const final = await followed.turn.completed;
    await followed.iterated;
    const { events } = await replayAll(server.baseUrl, answer.turnId);
    expect(final.text).toBe(textOf(events));
    expect(followed.applied).toEqual(range(events.length));
    expect(replays()).toHaveLength(1);
    expect(followed.ofType('recovered')).toEqual([expect.objectContaining({ path: 'replay', events: 1 })]);
  });

  it('heartbeats keep a slow turn alive without a false stall', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent, heartbeatMs: 10_000 });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_slow', 'go');
    const control = await agent.nextTurn();
    const counting = countingFetch();
    const followed = follow(server.baseUrl, answer.turnId, { stall: STALL, fetch: counting.fetch });
    cleanup.push(() => followed.client.dispose());
    await control.delta('thinking…');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('thinking…');

    // A minute of agent silence, two idle windows long: only heartbeats flow.
    for (let step = 0; step < 6; step++) {
      const before = counting.bytes();
      await vi.advanceTimersByTimeAsync(10_000);
      await expect.poll(() => counting.bytes()).toBeGreaterThan(before);
    }
    expect(followed.ofType('stalled')).toEqual([]);
    expect(followed.turn.getSnapshot().status).toBe('streaming');
    await control.delta(' done');
    await control.end();
    const final = await followed.turn.completed;
    expect(final.text).toBe('thinking… done');
    expect(followed.ofType('recovering')).toEqual([]);
    expect(followed.ofType('connect')).toHaveLength(1);
  });
});

describe('replay failures', () => {
  beforeEach(fakeTimers);

  /** A stream that sends the first `count` events, then stays open and silent. */
  function silentAfter(log: TurnEvent[], count: number) {
    return ({ index, res }: { index: number; res: ServerResponse }) => {
      if (index > 0) return 'default' as const;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(log.slice(0, count).map(sse).join(''));
      return undefined;
    };
  }

  it('retries a replay endpoint that is down, never discarding the partial text, until it is back (row 17)', async () => {
    const log = await buildLog(['Hel', 'lo ', '世界', '😀']);
    const server = await startScriptedServer({
      log,
      stream: silentAfter(log, 3),
      replay: ({ index, res }) => {
        if (index < 2) {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 'overloaded', message: 'down' } }));
          return;
        }
        if (index === 2) {
          res.socket?.destroy();
          return;
        }
        return 'default';
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { stall: STALL });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('Hello ');

    await vi.advanceTimersByTimeAsync(STALL.idleMs);
    for (let failure = 1; failure <= 3; failure++) {
      await expect.poll(() => followed.ofType('retry').filter((d) => d.scope === 'replay').length).toBe(failure);
      const snapshot = followed.turn.getSnapshot();
      expect(snapshot.text).toBe('Hello ');
      expect(['stalled', 'recovering']).toContain(snapshot.status);
      expect(snapshot.connection.state).toBe('waiting');
      await vi.advanceTimersByTimeAsync(followed.ofType('retry').at(-1)!.delayMs);
    }
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe('Hello 世界😀');
    expect(followed.applied).toEqual(range(log.length));
    expect(server.replays.map((request) => request.cursor)).toEqual(['3', '3', '3', '3']);
    expect(followed.ofType('retry').map((d) => d.cause?.code)).toEqual(['server_unavailable', 'server_unavailable', 'network_error']);
  });

  it('fails with turn_not_found when the replay answers 404, keeping the partial text', async () => {
    const log = await buildLog(['Hel', 'lo ', '世界']);
    const server = await startScriptedServer({
      log,
      stream: silentAfter(log, 3),
      replay: ({ res }) => {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'turn_not_found', message: 'gone' } }));
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { stall: STALL });
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('Hello ');
    await vi.advanceTimersByTimeAsync(STALL.idleMs);
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('turn_not_found');
    expect(final.text).toBe('Hello ');
    expect(server.replays).toHaveLength(1);
    expect(server.streams).toHaveLength(1);
  });
});

describe('replay racing the stream (row 15)', () => {
  it('merges a replay and a resumed stream by seq: J0 and exactly one completion', async () => {
    const log = await buildLog(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    let streamRes: ServerResponse | undefined;
    const server = await startScriptedServer({
      log,
      stream: ({ index, res }) => {
        if (index > 0) return 'default';
        streamRes = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(log.slice(0, 3).map(sse).join(''));
        return undefined;
      },
      replay: async () => {
        // While the replay is in flight, the stream delivers 4..6; then the replay answers everything.
        streamRes?.write(log.slice(3, 6).map(sse).join(''));
        await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(6);
        return 'default' as const;
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    await expect.poll(() => followed.turn.getSnapshot().lastSeq).toBe(3);

    const recovered = await followed.client.recover('conv_1');
    expect(recovered.map((snapshot) => snapshot.id)).toEqual([TURN]);
    const final = await followed.turn.completed;
    await followed.iterated;
    // The stream still holds the rest; what it says now must change nothing.
    streamRes?.end(log.slice(6).map(sse).join(''));
    expect(final.text).toBe('abcdefgh');
    expect(followed.applied).toEqual(range(log.length));
    // The replay asked after seq 3; the stream applied 4..6 while it was in flight.
    expect(followed.ofType('duplicate').map((d) => d.seq)).toEqual([4, 5, 6]);
    expect(followed.ofType('completed')).toHaveLength(1);
    expect(final.recovered).toEqual(expect.objectContaining({ path: 'replay', events: log.length - 6 }));
    expect(server.streams).toHaveLength(1);
  });
});
