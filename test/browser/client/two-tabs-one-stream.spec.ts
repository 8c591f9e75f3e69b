/**
 * FAULTS row 25: two tabs of one origin follow the same live turn through ONE network
 * stream. The tab holding the turn's Web Lock streams and relays; the other applies the
 * relayed events through its own apply path. When the leading tab closes, the browser
 * hands the lock on and the other tab resumes from its own cursor (Last-Event-ID = its
 * own last applied seq), ending with the server's text (T= in both). Relayed heartbeats
 * keep the watcher's stall watchdog quiet; when the relay goes silent, the watcher
 * recovers through its own stall path (replay).
 */
import { expect, test, type Page } from '@playwright/test';
import type * as Lifeline from '../../../src/index.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { toNodeListener } from '../../../src/server/node/index.js';
import { controlledAgent, type ControlledAgent } from '../../fixtures/agents.js';
import { isStreamRequest, startFaultProxy, type FaultProxy } from '../../fixtures/fault-proxy.js';
import { replayAll, submitMessage, textOf } from '../../fixtures/server.js';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';

interface TabRecord {
  shared: string[];
  connects: number[];
  stalls: number;
  replays: number;
  text: string;
  lastSeq: number;
  final: null | { status: string; text: string; lastSeq: number };
  failures: string[];
}

declare global {
  interface Window {
    lifeline: typeof Lifeline;
    lifelineReady?: boolean;
    __tab: TabRecord;
  }
}

/** One `/events` request as the server saw it. */
interface StreamRequest {
  lastEventId: string | undefined;
  open: boolean;
  heartbeats: number;
}

async function openTab(page: Page, origin: string): Promise<void> {
  await page.goto(origin);
  await page.waitForFunction(() => window.lifelineReady === true);
}

/** Follows `turnId` in the page with a client of namespace `share`, recording what a test checks. */
async function follow(page: Page, turnId: string, idleMs = 30_000): Promise<void> {
  await page.evaluate(({ turnId, idleMs }) => {
    const record: TabRecord = { shared: [], connects: [], stalls: 0, replays: 0, text: '', lastSeq: 0, final: null, failures: [] };
    window.__tab = record;
    addEventListener('unhandledrejection', (event) => record.failures.push(String(event.reason)));
    const client = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'share', stall: { firstEventMs: idleMs, idleMs } });
    client.diagnostics.subscribe((diagnostic) => {
      if (diagnostic.type === 'shared') record.shared.push(diagnostic.role);
      if (diagnostic.type === 'connect') record.connects.push(diagnostic.lastEventId);
      if (diagnostic.type === 'stalled') record.stalls += 1;
      if (diagnostic.type === 'recovered' && diagnostic.path === 'replay') record.replays += 1;
      if (diagnostic.type === 'failed' || diagnostic.type === 'protocol-error') record.failures.push(diagnostic.error.message);
    });
    const turn = client.turn(turnId);
    turn.subscribe(() => {
      const snapshot = turn.getSnapshot();
      record.text = snapshot.text;
      record.lastSeq = snapshot.lastSeq;
    });
    void turn.completed.then((snapshot) => {
      record.final = { status: snapshot.status, text: snapshot.text, lastSeq: snapshot.lastSeq };
    });
  }, { turnId, idleMs });
}

/** Polls on a timer: a tab behind another may get no animation frames. */
const POLL = { polling: 50 } as const;

const tab = (page: Page): Promise<TabRecord> => page.evaluate(() => window.__tab);

interface Rig {
  agent: ControlledAgent;
  pages: PageServer;
  proxy: FaultProxy;
  /** The API as the test (in Node) reaches it, without faults. */
  baseUrl: string;
  /** Every `/events` request the server received, in order. */
  streams: StreamRequest[];
  close(): Promise<void>;
}

/** The reference server behind the page server, counting streams and their heartbeats; pages load through a fault proxy. */
async function startRig(heartbeatMs: number): Promise<Rig> {
  const agent = controlledAgent();
  const log = createMemoryTurnLog();
  const handler = createLifelineHandler({ agent: agent.agent, store: log, basePath: '/api', heartbeatMs, onError: () => {} });
  const api = toNodeListener(handler);
  const streams: StreamRequest[] = [];
  const pages = await startPageServer((req, res) => {
    if (req.url?.includes('/events') === true) {
      const header = req.headers['last-event-id'];
      const stream: StreamRequest = { lastEventId: typeof header === 'string' ? header : undefined, open: true, heartbeats: 0 };
      streams.push(stream);
      res.on('close', () => (stream.open = false));
      const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        if (Buffer.from(chunk as Uint8Array).toString().includes('event: heartbeat')) stream.heartbeats += 1;
        return write(chunk, ...rest);
      }) as typeof res.write;
    }
    api(req, res);
  });
  const proxy = await startFaultProxy({ targetPort: pages.port });
  return {
    agent,
    pages,
    proxy,
    baseUrl: `${pages.url}/api`,
    streams,
    async close() {
      await proxy.close();
      await handler.close();
      await pages.close();
      await log.close();
    },
  };
}

let rig: Rig | undefined;
test.afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

test('two tabs share one stream per turn; the survivor resumes from its own seq when the leader closes (T= in both)', async ({ context }) => {
  rig = await startRig(100);
  const { agent, streams, baseUrl } = rig;
  const leader = await context.newPage();
  const watcher = await context.newPage();
  await openTab(leader, rig.proxy.origin);
  await openTab(watcher, rig.proxy.origin);
  const answer = await submitMessage(baseUrl, 'conv_tabs', 'go');
  const control = await agent.nextTurn();

  // A short idle watchdog: only the relayed heartbeats keep the watcher from stalling.
  await follow(leader, answer.turnId, 1_000);
  await leader.waitForFunction(() => window.__tab.shared.includes('leader'), undefined, POLL);
  await follow(watcher, answer.turnId, 1_000);
  for (const word of ['one ', 'two ', 'three ']) await control.delta(word);

  // Both tabs show the server's text so far, through a single stream.
  // The producer coalesces appends, so the log may lag the agent by a tick: the text so far is what was produced.
  const sofar = 'one two three ';
  await leader.waitForFunction((text) => window.__tab.text === text, sofar, POLL);
  await watcher.waitForFunction((text) => window.__tab.text === text, sofar, POLL);
  expect(textOf((await replayAll(baseUrl, answer.turnId)).events)).toBe(sofar);
  expect(streams.length).toBe(1);
  expect(streams.filter((stream) => stream.open).length).toBe(1);
  // The leader relays once the watcher has said it watches (at the latest with the next heartbeat).
  await watcher.waitForFunction(() => window.__tab.shared.includes('watcher'), undefined, POLL);
  const beforeClose = await tab(watcher);
  expect(beforeClose.shared).toEqual(['watcher']);
  expect(beforeClose.connects).toEqual([]);
  expect(beforeClose.lastSeq).toBeGreaterThan(1);
  expect((await tab(leader)).failures).toEqual([]);

  // Silence but for heartbeats, well past both watchdogs (20 × 100 ms > 1 000 ms): nobody stalls.
  const heartbeats = streams[0]?.heartbeats ?? 0;
  await expect.poll(() => streams[0]?.heartbeats ?? 0, { timeout: 15_000 }).toBeGreaterThanOrEqual(heartbeats + 20);
  expect((await tab(leader)).stalls).toBe(0);
  expect((await tab(watcher)).stalls).toBe(0);
  expect(streams.length).toBe(1);

  // The leader goes away mid-turn: the browser releases its lock, the watcher takes the stream.
  await leader.close();
  await watcher.waitForFunction(() => window.__tab.shared.includes('leader'), undefined, POLL);
  await expect.poll(() => streams.length).toBe(2);
  expect(streams[1]?.lastEventId).toBe(String(beforeClose.lastSeq));
  expect((await tab(watcher)).connects).toEqual([beforeClose.lastSeq]);

  for (const word of ['four ', 'five']) await control.delta(word);
  await control.end();
  await watcher.waitForFunction(() => window.__tab.final !== null, undefined, POLL);
  const { events } = await replayAll(baseUrl, answer.turnId);
  const final = await tab(watcher);
  expect(final.final).toEqual({ status: 'complete', text: textOf(events), lastSeq: events.length });
  expect(final.final?.text).toBe('one two three four five');
  expect(streams.length).toBe(2);
  expect(final.failures).toEqual([]);
});

test('a silent relay: the watcher stalls and recovers by replay on its own, still without a stream (T= in both)', async ({ context }) => {
  rig = await startRig(100);
  const { agent, streams, baseUrl, proxy } = rig;
  const leader = await context.newPage();
  const watcher = await context.newPage();
  await openTab(leader, proxy.origin);
  await openTab(watcher, proxy.origin);
  const answer = await submitMessage(baseUrl, 'conv_silent', 'go');
  const control = await agent.nextTurn();
  // The watcher's watchdog is the shorter one: it notices the silence before the leader recovers.
  await follow(leader, answer.turnId, 4_000);
  await leader.waitForFunction(() => window.__tab.shared.includes('leader'), undefined, POLL);
  await follow(watcher, answer.turnId, 1_000);
  await control.delta('before ');
  await watcher.waitForFunction(() => window.__tab.text === 'before ', undefined, POLL);
  const { replays } = await tab(watcher);

  // The leader's stream is black-holed: nothing reaches either tab, heartbeats included.
  expect(proxy.stallWhere(isStreamRequest)).toBe(1);
  await control.delta('hidden ');
  await watcher.waitForFunction(() => window.__tab.text === 'before hidden ', undefined, POLL);
  const watched = await tab(watcher);
  expect(watched.stalls).toBeGreaterThanOrEqual(1);
  expect(watched.replays).toBeGreaterThan(replays);
  // It recovered by replay while the leader still held the turn: no stream of its own.
  expect(watched.connects).toEqual([]);
  await leader.waitForFunction(() => window.__tab.text === 'before hidden ', undefined, POLL);

  await control.delta('after');
  await control.end();
  await leader.waitForFunction(() => window.__tab.final !== null, undefined, POLL);
  await watcher.waitForFunction(() => window.__tab.final !== null, undefined, POLL);
  const { events } = await replayAll(baseUrl, answer.turnId);
  const expected = { status: 'complete', text: textOf(events), lastSeq: events.length };
  expect((await tab(leader)).final).toEqual(expected);
  const final = await tab(watcher);
  expect(final.final).toEqual(expected);
  expect(final.final?.text).toBe('before hidden after');
  // Once the leader's turn ended it let the lock go; a watcher that had not yet applied the
  // end may take it and stream the rest itself, from its own cursor: one stream per tab at most.
  expect(final.connects.length).toBeLessThanOrEqual(1);
  expect(streams.length).toBe((await tab(leader)).connects.length + final.connects.length);
  expect(final.failures).toEqual([]);
  expect((await tab(leader)).failures).toEqual([]);
});
