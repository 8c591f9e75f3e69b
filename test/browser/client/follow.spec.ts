/**
 * The built client in real Chromium, following turns through the seeded fault proxy
 * (the page itself is served through the proxy, so page and API share one origin):
 * connections reset mid-event and black-holed mid-turn end byte-identical to the
 * server's log (T=, J0), and the issue-5 seed scenario: an action's JSON output
 * produced while the stream is black-holed is shown after a visible stall.
 */
import { expect, test, type Page } from '@playwright/test';
import type * as Lifeline from '../../../src/index.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { toNodeListener } from '../../../src/server/node/index.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent, PERSONAS, textAgent } from '../../fixtures/agents.js';
import { isStreamRequest, seededRandom, startFaultProxy, type FaultPlan, type FaultProxy, type RequestInfo } from '../../fixtures/fault-proxy.js';
import { replayAll, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { storedText } from '../fixtures/stored-text.js';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';

/** What the page records while it follows a turn. */
interface FollowRecord {
  statuses: string[];
  diagnostics: string[];
  applied: number[];
  final: null | {
    status: string;
    text: string;
    lastSeq: number;
    actions: unknown[];
    recovered?: { path: string; events: number };
    stall?: { watchdog: string };
  };
  failures: string[];
}

declare global {
  interface Window {
    lifeline: typeof Lifeline;
    lifelineReady?: boolean;
    __follow: Record<string, FollowRecord>;
  }
}

interface Rig {
  pages: PageServer;
  proxy: FaultProxy;
  log: TurnLog;
  /** The API as the test (in Node) reaches it, without faults. */
  baseUrl: string;
  close(): Promise<void>;
}

async function startRig(agent: Agent, plan: (request: RequestInfo) => FaultPlan): Promise<Rig> {
  const log = createMemoryTurnLog();
  const handler = createLifelineHandler({ agent, store: log, basePath: '/api', onError: () => {} });
  const pages = await startPageServer(toNodeListener(handler));
  const proxy = await startFaultProxy({ targetPort: pages.port, plan: (request) => (request.path.startsWith('/api/') ? plan(request) : { kind: 'pass' }) });
  return {
    pages,
    proxy,
    log,
    baseUrl: `${pages.url}/api`,
    async close() {
      await proxy.close();
      await handler.close();
      await pages.close();
      await log.close();
    },
  };
}

async function openPage(page: Page, origin: string): Promise<void> {
  await page.addInitScript(() => {
    window.__follow = {};
  });
  await page.goto(origin);
  await page.waitForFunction(() => window.lifelineReady === true);
}

/** Client options that travel into the page (plain JSON). */
interface ClientOptions {
  namespace: string;
  stall?: { firstEventMs: number; idleMs: number };
  retry?: { firstRetryJitterMs: number; initialDelayMs: number; maxDelayMs: number };
}

/** Creates a client in the page and follows `turnId`, recording statuses, diagnostics and applied seqs. */
async function followInPage(page: Page, turnId: string, options: ClientOptions): Promise<void> {
  await page.evaluate(
    ({ turnId, options }) => {
      const record: FollowRecord = { statuses: [], diagnostics: [], applied: [], final: null, failures: [] };
      window.__follow[turnId] = record;
      addEventListener('unhandledrejection', (event) => record.failures.push(String(event.reason)));
      const client = window.lifeline.createLifeline({ baseUrl: '/api', ...options });
      client.diagnostics.subscribe((diagnostic) => {
        record.diagnostics.push(diagnostic.type);
        if (diagnostic.type === 'stalled' || diagnostic.type === 'recovering') record.statuses.push(`(${diagnostic.type})`);
      });
      const turn = client.turn(turnId);
      turn.subscribe(() => {
        const status = turn.getSnapshot().status;
        if (record.statuses.at(-1) !== status) record.statuses.push(status);
      });
      void (async () => {
        for await (const event of turn) record.applied.push(event.seq);
      })();
      void turn.completed.then((snapshot) => {
        record.final = {
          status: snapshot.status,
          text: snapshot.text,
          lastSeq: snapshot.lastSeq,
          actions: [...snapshot.actions],
          ...(snapshot.recovered ? { recovered: { path: snapshot.recovered.path, events: snapshot.recovered.events } } : {}),
          ...(snapshot.stall ? { stall: { watchdog: snapshot.stall.watchdog } } : {}),
        };
      });
    },
    { turnId, options },
  );
}

async function finalOf(page: Page, turnId: string): Promise<FollowRecord> {
  await page.waitForFunction((id) => window.__follow[id]?.final !== null, turnId, { timeout: 45_000 });
  return page.evaluate((id) => window.__follow[id] as FollowRecord, turnId);
}


function range(n: number): number[] {
  return Array.from({ length: n }, (_, index) => index + 1);
}

function hostileText(random: () => number, words: number): string {
  const vocabulary = ['héllo', '日本語', '😀', '👩‍👩‍👧', '中文字', 'Ω≈ç', 'lifeline-chat', '🚀🔥', '한국어', '"q"'];
  return Array.from({ length: words }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(' ');
}

let rig: Rig | undefined;
test.afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

test('follows a turn through resets and black holes mid-turn: text identical, seqs applied once', async ({ page }) => {
  const random = seededRandom(0xb10c_5eed);
  // Long enough (several seconds) that every planned fault lands while the turn is live.
  const text = hostileText(random, 2_000);
  let streams = 0;
  rig = await startRig(textAgent(text, { chunk: 4, delayMs: 3 }), (request) => {
    if (!isStreamRequest(request)) return { kind: 'pass' };
    streams += 1;
    if (streams === 6 || streams === 12) return { kind: 'stall', afterBytes: 300 + Math.floor(random() * 2_000) };
    if (streams <= 12) return { kind: 'cut', afterBytes: 200 + Math.floor(random() * 4_000), how: 'rst' };
    return { kind: 'pass' };
  });
  await openPage(page, rig.proxy.origin);
  const answer = await submitMessage(rig.baseUrl, 'conv_browser', 'go');
  await followInPage(page, answer.turnId, {
    namespace: 'cuts',
    stall: { firstEventMs: 2_000, idleMs: 1_000 },
    retry: { firstRetryJitterMs: 20, initialDelayMs: 20, maxDelayMs: 250 },
  });
  const record = await finalOf(page, answer.turnId);
  const { events } = await replayAll(rig.baseUrl, answer.turnId);
  expect(record.final?.status).toBe('complete');
  expect(record.final?.text).toBe(textOf(events));
  expect(record.applied).toEqual(range(events.length));
  // Every planned fault hit the live turn: ten resets, two black holes each noticed by the watchdog.
  expect(rig.proxy.cuts).toBe(10);
  expect(record.diagnostics.filter((type) => type === 'stalled').length).toBe(2);
  expect(record.failures).toEqual([]);
  await expect.poll(() => storedText(page, answer.turnId, 'cuts')).toBe(textOf(events));
});

test('seed scenario: an action output produced while the stream is black-holed shows after a visible stall', async ({ page }) => {
  const agent = controlledAgent();
  // The replay path is slow (not broken): the stall stays visible while it answers.
  rig = await startRig(agent.agent, (request) => (isStreamRequest(request) ? { kind: 'pass' } : { kind: 'pass', delayMs: 400 }));
  await openPage(page, rig.proxy.origin);
  const answer = await submitMessage(rig.baseUrl, 'conv_personas', 'Propose personas');
  const control = await agent.nextTurn();
  await followInPage(page, answer.turnId, { namespace: 'seed', stall: { firstEventMs: 1_500, idleMs: 1_500 } });
  await control.delta('Let me propose some personas. ');
  await page.waitForFunction((id) => window.__follow[id]?.applied.length === 2, answer.turnId);

  expect(rig.proxy.stallWhere(isStreamRequest)).toBe(1);
  await control.action({ callId: 'call_personas_1', name: 'propose_personas', status: 'started', input: { count: 3 } });
  await control.action({ callId: 'call_personas_1', name: 'propose_personas', status: 'completed', output: PERSONAS });
  await control.delta('Here are three personas to test the idea with.');
  await control.end();
  await waitForTurnEnd(rig.log, answer.turnId);

  const record = await finalOf(page, answer.turnId);
  const { events } = await replayAll(rig.baseUrl, answer.turnId);
  const logged = events.filter((event): event is Extract<TurnEvent, { type: 'action' }> => event.type === 'action').at(-1);
  expect(logged?.output).toEqual(PERSONAS);
  expect(record.final?.status).toBe('complete');
  expect(record.final?.text).toBe(textOf(events));
  expect(record.final?.actions).toEqual([
    expect.objectContaining({ callId: 'call_personas_1', name: 'propose_personas', status: 'completed', input: { count: 3 }, output: PERSONAS }),
  ]);
  expect(record.final?.stall).toEqual({ watchdog: 'idle' });
  expect(record.final?.recovered).toEqual({ path: 'replay', events: events.length - 2 });
  // The page showed the stall, then the recovery, then the end.
  const shown = record.statuses.filter((status) => !status.startsWith('('));
  expect(shown.indexOf('stalled')).toBeGreaterThan(-1);
  expect(shown.indexOf('stalled')).toBeLessThan(shown.lastIndexOf('complete'));
  expect(record.applied).toEqual(range(events.length));
  expect(record.failures).toEqual([]);
});

test('recover() after clearing IndexedDB finds and replays the conversation\'s turns', async ({ page }) => {
  rig = await startRig(textAgent('An answer with 日本語 and 😀 worth keeping.', { chunk: 3 }), () => ({ kind: 'pass' }));
  await openPage(page, rig.proxy.origin);
  const first = await submitMessage(rig.baseUrl, 'conv_cleared', 'one');
  const second = await submitMessage(rig.baseUrl, 'conv_cleared', 'two');
  await waitForTurnEnd(rig.log, first.turnId);
  await waitForTurnEnd(rig.log, second.turnId);
  const texts = await page.evaluate(
    async ({ ids }) => {
      const before = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'cleared' });
      for (const id of ids) await before.turn(id).completed;
      await before.clearStorage();
      before.dispose();
      const store = window.lifeline.createIndexedDbStore({ namespace: 'cleared' });
      const left = (await store.loadTurns()).items.length;
      store.close();
      const after = window.lifeline.createLifeline({ baseUrl: '/api', namespace: 'cleared' });
      const recovered = await after.recover('conv_cleared');
      after.dispose();
      return { left, recovered: recovered.map((turn) => ({ id: turn.id, status: turn.status, text: turn.text, path: turn.recovered?.path })) };
    },
    { ids: [first.turnId, second.turnId] },
  );
  expect(texts.left).toBe(0);
  expect(texts.recovered.map((turn) => turn.id).sort()).toEqual([first.turnId, second.turnId].sort());
  for (const turn of texts.recovered) {
    const { events } = await replayAll(rig.baseUrl, turn.id);
    expect(turn).toEqual({ id: turn.id, status: 'complete', text: textOf(events), path: 'replay' });
  }
});
