/**
 * FAULTS row 25 in Node: two clients of one namespace stand for two tabs. Node has a real
 * BroadcastChannel (it delivers between instances of one process); `navigator.locks` is a
 * small FIFO stand-in with the Web Locks semantics the follower relies on (exclusive, in
 * request order, held until the callback's promise settles). The browser spec
 * (test/browser/client/two-tabs-one-stream.spec.ts) covers the same with real tabs.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { controlledAgent } from '../../fixtures/agents.js';
import { replayAll, startTestServer, submitMessage, textOf } from '../../fixtures/server.js';
import { follow, type Followed } from './support/follow.js';

/** Exclusive locks granted in request order; `refuse` makes every request reject (a sandboxed frame). */
function fakeLocks(refuse = false) {
  const tails = new Map<string, Promise<unknown>>();
  return {
    // The Web Locks shape: a queued request whose signal aborts is withdrawn, its callback never runs.
    request(name: string, options: { signal?: AbortSignal }, callback: () => unknown): Promise<unknown> {
      if (refuse) return Promise.reject(new DOMException('Refused.', 'SecurityError'));
      const result = (tails.get(name) ?? Promise.resolve()).then(() => {
        if (options.signal?.aborted) throw new DOMException('Withdrawn.', 'AbortError');
        return callback();
      });
      tails.set(name, result.catch(() => {}));
      return result;
    },
  };
}

interface Stream {
  lastEventId: string | null;
}

/** A fetch that records every `/events` request a client makes. */
function recordingFetch(streams: Stream[]): typeof fetch {
  return (input, init) => {
    if (String(input).endsWith('/events')) streams.push({ lastEventId: new Headers(init?.headers).get('last-event-id') });
    return fetch(input, init);
  };
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

async function rig() {
  const agent = controlledAgent();
  const server = await startTestServer({ agent: agent.agent, heartbeatMs: 50 });
  cleanup.push(() => server.close());
  const answer = await submitMessage(server.baseUrl, 'conv_tabs', 'go');
  const control = await agent.nextTurn();
  const tab = (streams: Stream[]): Followed => {
    const followed = follow(server.baseUrl, answer.turnId, { namespace: 'tabs', fetch: recordingFetch(streams) });
    cleanup.push(() => followed.client.dispose());
    return followed;
  };
  return { server, turnId: answer.turnId, control, tab };
}

const roles = (tab: Followed): string[] => tab.ofType('shared').map((d) => d.role);

/** Every message any tab posts on a BroadcastChannel, in order (still delivered). */
function recordPosts(): unknown[] {
  const posted: unknown[] = [];
  const post = BroadcastChannel.prototype.postMessage;
  vi.spyOn(BroadcastChannel.prototype, 'postMessage').mockImplementation(function (this: BroadcastChannel, message: unknown) {
    posted.push(message);
    post.call(this, message);
  });
  return posted;
}

describe('tabs share one stream per turn', () => {
  it('one stream for two tabs; a late watcher repairs through replay; the survivor resumes from its own cursor (T= in both)', async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks() });
    const posted = recordPosts();
    const { server, turnId, control, tab } = await rig();
    const leaderStreams: Stream[] = [];
    const watcherStreams: Stream[] = [];

    const leader = tab(leaderStreams);
    await expect.poll(() => roles(leader)).toEqual(['leader']);
    await control.delta('one ');
    await expect.poll(() => leader.turn.getSnapshot().text).toBe('one ');
    // Alone: presence only, no relayed batch (no structured clone per event for nobody).
    expect(posted).toEqual([0]);

    const watcher = tab(watcherStreams);
    // The watcher joined at seq 0 after seq 2: the first batch shows it is behind, it replays.
    await expect.poll(() => watcher.turn.getSnapshot().text).toBe('one ');
    await control.delta('two ');
    await expect.poll(() => watcher.turn.getSnapshot().text).toBe('one two ');
    expect(roles(watcher)).toEqual(['watcher']);
    expect(watcher.ofType('recovered').map((d) => d.path)).toContain('replay');
    expect(watcherStreams).toEqual([]);
    expect(leaderStreams).toHaveLength(1);

    // The leading tab stops following: the lock passes, the watcher streams from its own seq.
    const { lastSeq } = watcher.turn.getSnapshot();
    leader.turn.close();
    await expect.poll(() => roles(watcher)).toEqual(['watcher', 'leader']);
    await expect.poll(() => watcherStreams).toEqual([{ lastEventId: String(lastSeq) }]);
    expect(watcher.ofType('connect').map((d) => d.lastEventId)).toEqual([lastSeq]);

    await control.delta('three');
    await control.end();
    const final = await watcher.turn.completed;
    const { events } = await replayAll(server.baseUrl, turnId);
    expect(final.text).toBe(textOf(events));
    expect(final.text).toBe('one two three');
    await watcher.iterated;
    expect(watcher.applied).toEqual(events.map((event) => event.seq));
    expect(leaderStreams).toHaveLength(1);
    expect(watcher.ofType('failed')).toEqual([]);
  });

  it('the leader relays what it applied by replay too: a watcher makes no request of its own', async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks() });
    const posted = recordPosts();
    const { server, turnId, control } = await rig();
    await control.delta('made ');
    await control.delta('while ');
    // The leader's first stream says 204, so it replays; its replay waits until the watcher has joined.
    let watcherJoined!: () => void;
    const joined = new Promise<void>((resolve) => (watcherJoined = resolve));
    const leaderRequests: string[] = [];
    const leader = follow(server.baseUrl, turnId, {
      namespace: 'relay',
      fetch: async (input, init) => {
        const url = String(input);
        leaderRequests.push(url);
        if (url.endsWith('/events') && leaderRequests.length === 1) return new Response(null, { status: 204 });
        if (!url.endsWith('/events')) await joined;
        return fetch(input, init);
      },
    });
    cleanup.push(() => leader.client.dispose());
    await expect.poll(() => roles(leader)).toEqual(['leader']);
    const watcherRequests: string[] = [];
    const watcher = follow(server.baseUrl, turnId, {
      namespace: 'relay',
      fetch: (input, init) => (watcherRequests.push(String(input)), fetch(input, init)),
    });
    cleanup.push(() => watcher.client.dispose());
    // The leader answered the watcher's hello: it knows it is watched.
    await expect.poll(() => posted).toContain(1);
    watcherJoined();
    // What the leader replayed reaches the watcher by relay, not by a replay of its own.
    await expect.poll(() => watcher.turn.getSnapshot().text).toBe('made while ');
    expect(leader.ofType('recovered').map((d) => d.path)).toEqual(['replay']);
    expect(watcherRequests).toEqual([]);
    expect(roles(watcher)).toEqual(['watcher']);
    await control.delta('away');
    await control.end();
    const [a, b] = await Promise.all([leader.turn.completed, watcher.turn.completed]);
    expect([a.text, b.text]).toEqual(['made while away', 'made while away']);
  });

  it('a tab that stops following before its turn came withdraws its lock request: it never leads later', async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks() });
    const { control, tab } = await rig();
    const firstStreams: Stream[] = [];
    const secondStreams: Stream[] = [];
    const first = tab(firstStreams);
    await expect.poll(() => roles(first), { timeout: 10_000 }).toEqual(['leader']);
    const second = tab(secondStreams);
    await control.delta('x');
    await expect.poll(() => second.turn.getSnapshot().text, { timeout: 10_000 }).toBe('x');
    // The watcher closes while queued for the lock, then the leader goes: the lock must not wake the closed tab.
    second.turn.close();
    await expect.poll(() => second.turn.getSnapshot().connection.state, { timeout: 10_000 }).toBe('idle');
    first.turn.close();
    await control.delta('y');
    await control.end();
    await expect.poll(() => first.turn.getSnapshot().connection.state, { timeout: 10_000 }).toBe('idle');
    expect(roles(second)).toEqual(['watcher']);
    expect(secondStreams).toEqual([]);
    expect(second.turn.getSnapshot().text).toBe('x');
  });

  it('where the lock manager refuses, every tab streams alone', async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks(true) });
    const { server, turnId, control, tab } = await rig();
    const streams: Stream[] = [];
    const first = tab(streams);
    const second = tab(streams);
    await control.delta('alone');
    await control.end();
    const [a, b] = await Promise.all([first.turn.completed, second.turn.completed]);
    const text = textOf((await replayAll(server.baseUrl, turnId)).events);
    expect([a.text, b.text]).toEqual([text, text]);
    expect(streams).toHaveLength(2);
    expect([...roles(first), ...roles(second)]).toEqual([]);
  });
});
