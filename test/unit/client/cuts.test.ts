/**
 * FAULTS rows 1, 5, 13: streams cut at seeded random byte offsets (mid-event, mid-UTF-8
 * character, FIN and RST), and a server that goes away and comes back. The oracles:
 * T= (text identical to the server's replay, on screen and in storage) and J0 (the
 * applied seq log is exactly 1..N).
 */
import './support/dom-shim.js';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { isStreamRequest, seededRandom, startFaultProxy, type FaultProxy } from '../../fixtures/fault-proxy.js';
import { startTestServer, submitMessage, type TestServer } from '../../fixtures/server.js';
import { expectSameAsServer, follow, type Followed } from './support/follow.js';

/** Text dense in multi-byte characters: CJK (3 bytes), emoji (4 bytes, surrogate pairs), ZWJ sequences. */
function hostileText(random: () => number, words: number): string {
  const vocabulary = ['héllo', '日本語', '😀', '👩‍👩‍👧', '中文字', 'Ω≈ç', 'lifeline-chat', '🚀🔥', 'ça', '한국어', '\n', '"quoted"', '\\'];
  const parts: string[] = [];
  for (let i = 0; i < words; i++) parts.push(vocabulary[Math.floor(random() * vocabulary.length)] as string);
  return parts.join(' ');
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function expectIdentical(server: TestServer, followed: Followed, turnId: string): Promise<void> {
  const text = await expectSameAsServer(server.baseUrl, followed, turnId);
  // T= in storage too: the folded row holds the same text.
  await expect.poll(async () => (await followed.store.loadTurn(turnId))?.record.text).toBe(text);
}

describe('cut streams', () => {
  it('survives 200 seeded cuts at random byte offsets over one long turn (T=, J0)', async () => {
    const random = seededRandom(0x5eed_2001);
    const text = hostileText(random, 9000);
    const server = await startTestServer({ agent: textAgent(text, { chunk: 3 }) });
    cleanup.push(() => server.close());
    let planned = 0;
    const proxy = await startFaultProxy({
      targetPort: (server.server.address() as AddressInfo).port,
      plan: (request) => {
        if (!isStreamRequest(request) || planned >= 200) return { kind: 'pass' };
        planned += 1;
        return { kind: 'cut', afterBytes: 1 + Math.floor(random() * 3000), how: random() < 0.5 ? 'rst' : 'fin' };
      },
    });
    cleanup.push(() => proxy.close());
    const answer = await submitMessage(server.baseUrl, 'conv_cuts', 'go');
    const followed = follow(`${proxy.origin}/api`, answer.turnId);
    cleanup.push(() => followed.client.dispose());

    await expectIdentical(server, followed, answer.turnId);
    expect(proxy.cuts).toBe(200);
    expect(followed.ofType('disconnect').length).toBeGreaterThanOrEqual(200);
    // Every resume carried the client's own cursor: a valid resume point, never ahead of what it applied.
    const cursors = proxy.requests.filter(isStreamRequest).map((request) => request.headers['last-event-id']);
    for (const cursor of cursors.slice(1)) expect(cursor ?? '0').toMatch(/^[0-9]{1,15}$/);
    // NL: at most one stream request per cut plus the first, and replays only after repeated failures.
    expect(cursors.length).toBeLessThanOrEqual(proxy.cuts + 1);
    // 200 real reconnects take 13–20 s on an idle 2-core machine; the bound is a hang guard, not a measure.
  }, 90_000);

  it('backs off through connection refused while the server is down, then resumes (row 13)', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    const port = (server.server.address() as AddressInfo).port;
    const answer = await submitMessage(server.baseUrl, 'conv_restart', 'go');
    const control = await agent.nextTurn();
    const followed = follow(server.baseUrl, answer.turnId);
    cleanup.push(() => followed.client.dispose());
    await control.delta('before the restart 日本 ');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('before the restart 日本 ');

    // Kill the listener (the turn log and producer live on, as with a shared store).
    await new Promise<void>((resolve) => {
      server.server.close(() => resolve());
      server.server.closeAllConnections();
    });
    await control.delta('while down 😀 ');
    await expect.poll(() => followed.ofType('retry').filter((d) => d.scope === 'stream' && d.cause?.code === 'network_error').length).toBeGreaterThanOrEqual(2);
    await new Promise<void>((resolve) => server.server.listen(port, '127.0.0.1', resolve));
    await control.delta('after');
    await control.end();

    await expectIdentical(server, followed, answer.turnId);
    expect(followed.turn.getSnapshot().text).toBe('before the restart 日本 while down 😀 after');
  });
});

describe('proxy fixture', () => {
  let proxy: FaultProxy | undefined;
  afterEach(async () => proxy?.close());

  it('stalls a live stream on demand: the client sees silence, new requests pass', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    proxy = await startFaultProxy({ targetPort: (server.server.address() as AddressInfo).port });
    const answer = await submitMessage(server.baseUrl, 'conv_proxy', 'go');
    const control = await agent.nextTurn();
    const followed = follow(`${proxy.origin}/api`, answer.turnId, { stall: { firstEventMs: 60_000, idleMs: 60_000 } });
    cleanup.push(() => followed.client.dispose());
    await control.delta('a');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('a');
    expect(proxy.stallWhere(isStreamRequest)).toBe(1);
    await control.delta('b');
    // The replay endpoint still answers through the proxy while the stream is black-holed.
    const replay = await fetch(`${proxy.origin}/api/turns/${answer.turnId}?after=0`);
    expect(((await replay.json()) as { events: unknown[] }).events).toHaveLength(3);
    expect(followed.turn.getSnapshot().text).toBe('a');
    await control.end();
  });
});
