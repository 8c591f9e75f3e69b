/**
 * FAULTS row 19 in real Chromium: the tab is hidden and shown again, frozen and resumed,
 * while a turn streams and a second submission is in flight. No stream is aborted and
 * re-opened per visibility change, no submission is sent twice, at most one reconnect
 * follows a resume; the text is the server's (T=), seqs are applied once (J0), one turn
 * per Idempotency-Key (X1).
 *
 * What actually changes visibility in this Chromium (156, headless), measured:
 * - Playwright's own pages never go hidden: on every page it creates it enables
 *   `Emulation.setFocusEmulationEnabled`, which takes a capturer that keeps the renderer
 *   "user-visible". Under it, minimising the window, bringing another page to the front
 *   and `Page.setWebLifecycleState` fire nothing (no `visibilitychange`, no `freeze`).
 * - So this file launches Chromium itself and attaches with
 *   `connectOverCDP(…, { noDefaults: true })`: pages of the default context then get no
 *   focus emulation. There, `Browser.setWindowBounds` `minimized` / `normal` fires
 *   `visibilitychange` to `hidden` / `visible` (as `bringToFront` of another page does);
 *   `Page.setWebLifecycleState` `frozen` fires `visibilitychange` (hidden) then `freeze`
 *   and really stops the page's tasks; `active` fires `resume` and leaves the page hidden
 *   until it is brought to the front.
 * - A fetch stream that receives data while its page is frozen delivers nothing more after
 *   `resume` (no error, no close; later writes and heartbeats do not wake it; only the end
 *   of the response does). One that received nothing while frozen goes on. So the client
 *   re-opens an open stream on `resume` (the last test pins it: no waiting for the watchdog).
 */
import { expect, test, type Page } from '@playwright/test';
import {
  acceptedOf,
  appliedOf,
  connectsOf,
  countIn,
  diagnosticTypes,
  expectTurnsExact,
  firstTurnStreaming,
  launchUnemulatedChromium,
  logReaches,
  openClient,
  secondSending,
  startRig,
  turnsOf,
  visibilityOf,
  type Rig,
  type UnemulatedChromium,
} from '../fixtures/hidden-frozen-rig.js';

let chromium: UnemulatedChromium | undefined;
test.beforeAll(async () => {
  chromium = await launchUnemulatedChromium();
});
test.afterAll(async () => {
  await chromium?.close();
});

let rig: Rig | undefined;
let page: Page | undefined;
test.afterEach(async () => {
  await page?.close();
  page = undefined;
  await rig?.close();
  rig = undefined;
});

/** openClient in this file's Chromium; the page is kept for the teardown. */
async function openPage(origin: string, namespace: string, stall?: Parameters<typeof openClient>[3]) {
  const opened = await openClient((chromium as UnemulatedChromium).context, origin, namespace, stall);
  page = opened.page;
  return opened;
}

/**
 * A fresh rig and page in `namespace` (conversation `conv-<namespace>`): a first turn streaming
 * and a second message whose POST the server holds.
 */
async function twoMessagesInFlight(namespace: string) {
  // Kept in the module's `rig` too, for the teardown.
  const started = (rig = await startRig());
  const { page: tab, cdp } = await openPage(started.web.url, namespace);
  const conversationId = `conv-${namespace}`;
  const first = await firstTurnStreaming(tab, started, conversationId);
  const secondKey = await secondSending(tab, started, conversationId);
  return { rig: started, tab, cdp, conversationId, first, secondKey };
}

// ------------------------------------------------------------------ the tests

test('hidden and visible again, three times, while a turn streams and a message is sending: one stream, one POST per key', async () => {
  const namespace = 'hidden';
  const { rig, tab, cdp, conversationId, first, secondKey } = await twoMessagesInFlight(namespace);
  const { windowId } = (await cdp.send('Browser.getWindowForTarget')) as { windowId: number };

  // Each flip: hidden, an event produced and applied while hidden, visible, another event applied.
  let expected = 2;
  for (let flip = 0; flip < 3; flip++) {
    await cdp.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'minimized' } });
    await expect.poll(() => visibilityOf(tab)).toBe('hidden');
    await first.control.delta(`hidden ${flip} 日本語 😀. `);
    await expect.poll(() => appliedOf(tab, first.turnId)).toBe(++expected);
    await cdp.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'normal' } });
    await expect.poll(() => visibilityOf(tab)).toBe('visible');
    await first.control.delta(`visible ${flip}. `);
    await expect.poll(() => appliedOf(tab, first.turnId)).toBe(++expected);
  }
  expect(await tab.evaluate(() => window.__rec.lifecycle)).toEqual(['hidden', 'visible', 'hidden', 'visible', 'hidden', 'visible']);
  // The submission in flight through all of it was posted once and is still waiting for its answer.
  expect(await tab.evaluate(() => window.__rec.client.outbox.getSnapshot().map((entry) => [entry.state, entry.attempts]))).toEqual([['sending', 1]]);

  rig.releasePosts();
  const second = await rig.agent.nextTurn();
  await expect.poll(() => acceptedOf(tab).then((list) => list.length)).toBe(2);
  const accepted = await acceptedOf(tab);
  const secondTurnId = accepted[1]?.turnId as string;
  expect(accepted[1]?.operationId).toBe(secondKey);
  await second.delta('The second answer. ');
  await second.end();
  await first.control.delta('The first answer ends.');
  await first.control.end();
  await expectTurnsExact(tab, rig, namespace, [first.turnId, secondTurnId]);

  // No reconnect: one stream request per turn, no replay, no disconnect or retry seen by the client.
  expect(countIn(rig.seen.streams, first.turnId)).toBe(1);
  expect(countIn(rig.seen.streams, secondTurnId)).toBe(1);
  expect(rig.seen.replays).toEqual([]);
  for (const turnId of [first.turnId, secondTurnId]) {
    expect((await diagnosticTypes(tab, turnId)).filter((type) => ['disconnect', 'retry', 'stalled', 'recovering'].includes(type))).toEqual([]);
  }
  // X1: each key posted once, each produced exactly one turn; the outbox ends empty.
  expect(rig.seen.posts).toEqual([first.key, secondKey]);
  expect(await turnsOf(rig, conversationId)).toEqual([first.turnId, secondTurnId].sort());
  expect(new Set([first.turnId, secondTurnId]).size).toBe(2);
  expect(await tab.evaluate(() => window.__rec.client.outbox.getSnapshot().length)).toBe(0);
  expect(await tab.evaluate(() => window.__rec.failures)).toEqual([]);
});

test('frozen while the server produces events and answers a submission, then resumed: at most one reconnect, nothing re-sent', async () => {
  const namespace = 'frozen';
  const { rig, tab, cdp, conversationId, first, secondKey } = await twoMessagesInFlight(namespace);

  await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
  // While frozen: the turn goes on at the server, and the held submission commits and is answered.
  const whileFrozen = ['While the tab slept, ', 'the server kept writing: ', '中文字 👩‍👩‍👧 ', 'four deltas. '];
  for (const text of whileFrozen) await first.control.delta(text);
  await logReaches(rig.log, first.turnId, 2 + whileFrozen.length);
  rig.releasePosts();
  const second = await rig.agent.nextTurn();
  const secondTurnId = second.context.turnId;
  await second.delta('Answered while the asker was frozen. ');
  await logReaches(rig.log, secondTurnId, 2);

  await cdp.send('Page.setWebLifecycleState', { state: 'active' });
  // `active` resumes the page but leaves it hidden; the window coming back shows it.
  const { windowId } = (await cdp.send('Browser.getWindowForTarget')) as { windowId: number };
  await cdp.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'minimized' } });
  await cdp.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'normal' } });
  await expect.poll(() => visibilityOf(tab)).toBe('visible');
  expect(await tab.evaluate(() => window.__rec.lifecycle)).toEqual(['hidden', 'freeze', 'resume', 'visible']);
  // What the server wrote meanwhile arrives: the first turn catches up, the answer to the second submission is taken.
  await expect.poll(() => appliedOf(tab, first.turnId)).toBe(2 + whileFrozen.length);
  await expect.poll(() => acceptedOf(tab)).toEqual([
    { operationId: first.key, turnId: first.turnId },
    { operationId: secondKey, turnId: secondTurnId },
  ]);

  await first.control.delta('After the resume. ');
  await first.control.end();
  await second.delta('And done.');
  await second.end();
  await expectTurnsExact(tab, rig, namespace, [first.turnId, secondTurnId]);

  // At most one reconnect for the turn that lived through the freeze. Measured here: a fetch stream that
  // receives data while its page is frozen never delivers another byte after the resume (no error, no
  // close: a black hole until the connection ends), so the client re-opens it on `resume`, once.
  // A stream that survives would give zero. The turn accepted after the resume streams once.
  const reconnects = (await connectsOf(tab, rig, first.turnId)).length - 1;
  expect(reconnects).toBeGreaterThanOrEqual(0);
  expect(reconnects).toBeLessThanOrEqual(1);
  expect(countIn(rig.seen.replays, first.turnId)).toBeLessThanOrEqual(1);
  const firstDiagnostics = await diagnosticTypes(tab, first.turnId);
  // Each reconnect has its visible cause (a stall or a cut), and no backoff loop ran.
  expect(countIn(firstDiagnostics, 'stalled') + countIn(firstDiagnostics, 'disconnect')).toBe(reconnects);
  expect(countIn(firstDiagnostics, 'retry')).toBe(0);
  expect(countIn(rig.seen.streams, secondTurnId)).toBe(1);
  expect(countIn(rig.seen.replays, secondTurnId)).toBe(0);
  // X1: the submission answered while frozen was not posted again; one turn per key; the outbox ends empty.
  expect(rig.seen.posts).toEqual([first.key, secondKey]);
  expect(await turnsOf(rig, conversationId)).toEqual([first.turnId, secondTurnId].sort());
  expect(await tab.evaluate(() => window.__rec.client.outbox.getSnapshot().length)).toBe(0);
  expect(await tab.evaluate(() => window.__rec.failures)).toEqual([]);
});

// On `resume` the follower re-opens its stream at once with Last-Event-ID (one reconnect,
// said as a `disconnect`), instead of showing stale text until the idle watchdog fires. With
// 30 s watchdogs, only that catches up inside the poll's 5 s.
test('frozen, then resumed with 30 s watchdogs: the turn catches up through one reconnect on resume, without a stall', async () => {
  rig = await startRig();
  const namespace = 'resume-aware';
  const { page: tab, cdp } = await openPage(rig.web.url, namespace, { firstEventMs: 30_000, idleMs: 30_000 });
  const first = await firstTurnStreaming(tab, rig, 'conv-resume-aware');

  await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
  await first.control.delta('Written while frozen. ');
  await logReaches(rig.log, first.turnId, 3);
  await cdp.send('Page.setWebLifecycleState', { state: 'active' });

  await expect.poll(() => appliedOf(tab, first.turnId), { timeout: 5_000 }).toBe(3);
  expect(await diagnosticTypes(tab, first.turnId)).not.toContain('stalled');
  // One reconnect, from the cursor at the resume: 2 when the frozen stream went deaf (the usual case), 3 when
  // the page took the delta before the `resume` event ran (seen under load). Either way each seq applies once.
  const connects = await connectsOf(tab, rig, first.turnId);
  expect(connects).toHaveLength(2);
  expect(connects[0]).toBe(`${first.turnId}@`);
  expect([`${first.turnId}@2`, `${first.turnId}@3`]).toContain(connects[1]);
  await first.control.end();
  await expectTurnsExact(tab, rig, namespace, [first.turnId]);
});
