/**
 * A native EventSource (Chromium's own reconnect logic, no Lifeline client) following
 * a turn of the reference server while the server cuts the stream's socket several
 * times mid-turn. EventSource reconnects by itself with Last-Event-ID, and the server's
 * resume must hand it every event exactly once.
 */
import { createHash } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { toNodeListener, type NodeListener } from '../../../src/server/node/index.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { createSocketTracker, replayAll, submitMessage, textOf } from '../../fixtures/server.js';
import { startPageServer } from '../fixtures/page-server.js';

interface Received {
  lastEventId: string;
  type: string;
  data: string;
}

interface PageState {
  received: Received[];
  opens: number;
  errors: number;
  source: EventSource;
}

test('native EventSource resumes with Last-Event-ID through repeated socket cuts and gets every event once', async ({ page }) => {
  const agent = controlledAgent();
  const handler = createLifelineHandler({ agent: agent.agent, basePath: '/api', retryMs: 100, heartbeatMs: 60_000 });
  const sockets = createSocketTracker();
  const resumePoints: (string | null)[] = [];
  const api = sockets.wrap(toNodeListener(handler));
  const recording: NodeListener = (req, res) => {
    if ((req.url ?? '').includes('/events')) {
      const header = req.headers['last-event-id'];
      resumePoints.push(typeof header === 'string' ? header : null);
    }
    api(req, res);
  };
  const server = await startPageServer(recording);
  try {
    const answer = await submitMessage(`${server.url}/api`, 'conv-native', 'stream to a native EventSource');
    const control = await agent.nextTurn();
    await page.goto(server.url);

    await page.evaluate((url) => {
      const state: PageState = { received: [], opens: 0, errors: 0, source: new EventSource(url) };
      for (const type of ['turn.start', 'delta', 'action', 'turn.end', 'heartbeat']) {
        state.source.addEventListener(type, (event) => {
          const message = event as MessageEvent<string>;
          state.received.push({ lastEventId: message.lastEventId, type, data: message.data });
        });
      }
      state.source.addEventListener('open', () => state.opens++);
      state.source.addEventListener('error', () => state.errors++);
      (globalThis as unknown as { state: PageState }).state = state;
    }, `/api/turns/${answer.turnId}/events`);

    const receivedCount = (): Promise<number> =>
      page.evaluate(() => (globalThis as unknown as { state: PageState }).state.received.length);
    const opens = (): Promise<number> => page.evaluate(() => (globalThis as unknown as { state: PageState }).state.opens);

    let logged = 1; // turn.start
    let word = 0;
    const produce = async (count: number): Promise<void> => {
      for (let i = 0; i < count; i++) {
        await control.delta(`w${word++}😀 `);
        logged++;
      }
    };

    await expect.poll(opens).toBe(1);
    const cuts = 5;
    for (let cut = 1; cut <= cuts; cut++) {
      await produce(20);
      if (cut % 2 === 1) {
        // Cut once the browser has everything so far…
        await expect.poll(receivedCount).toBe(logged);
      } else {
        // …or right away, possibly in the middle of a write.
        await expect.poll(receivedCount).toBeGreaterThan(0);
      }
      await expect.poll(() => sockets.size).toBe(1);
      expect(sockets.destroyAll()).toBe(1);
      // Produced while no client is connected: the server keeps it for the resume.
      await produce(7);
      await expect.poll(opens).toBe(cut + 1);
    }
    await control.action({ callId: 'call-1', name: 'propose_personas', status: 'completed', output: [{ name: 'Ada' }] });
    logged++;
    await produce(3);
    await control.end();
    logged++;

    // After turn.end the stream closes; EventSource reconnects once, gets 204 and stops for good.
    await expect.poll(() => page.evaluate(() => (globalThis as unknown as { state: PageState }).state.source.readyState)).toBe(2);
    const received = await page.evaluate(() => (globalThis as unknown as { state: PageState }).state.received);

    expect(received.every((message) => message.type !== 'heartbeat')).toBe(true);
    const events: TurnEvent[] = received.map((message) => turnEventSchema.parse(JSON.parse(message.data)));
    for (const [i, message] of received.entries()) expect(message.lastEventId).toBe(String(events[i]?.seq));
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: logged }, (_, i) => i + 1));
    const replay = await replayAll(`${server.url}/api`, answer.turnId);
    expect(events).toEqual(replay.events);
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'turn.end', status: 'complete' });
    const text = textOf(events);
    expect(text).toBe(textOf(replay.events));
    expect(end?.type === 'turn.end' && end.textSha256).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));

    // First request without a resume point, then one per cut, each with a numeric
    // Last-Event-ID that never goes backwards, and the final one that got 204.
    expect(resumePoints[0]).toBeNull();
    const resumed = resumePoints.slice(1);
    expect(resumed.length).toBe(cuts + 1);
    for (const value of resumed) expect(value).toMatch(/^[0-9]+$/);
    const numbers = resumed.map(Number);
    expect([...numbers].sort((a, b) => a - b)).toEqual(numbers);
    expect(numbers.at(-1)).toBe(logged);
  } finally {
    await handler.close();
    await server.close();
  }
});
