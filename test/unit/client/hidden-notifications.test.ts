/**
 * Notifications are batched per animation frame while the page is visible; a hidden page
 * gets no frames. Hiding the page must deliver what waits for a frame at once, or the
 * subscribers of a background tab would hear nothing until it is shown again.
 */
import { expect, it, vi } from 'vitest';

/** A page that says it is visible, fires `visibilitychange`, and whose frames never come. */
const page = Object.assign(new EventTarget(), { visibilityState: 'visible', hidden: false });
const frames: FrameRequestCallback[] = [];
Object.assign(globalThis, {
  document: page,
  window: { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout },
  requestAnimationFrame: (callback: FrameRequestCallback) => frames.push(callback),
});

it('delivers a notification waiting for a frame when the page is hidden, then notifies per microtask', async () => {
  const { createLifeline } = await import('../../../src/client.js');
  // A stream that never answers: the follower only changes its connection state.
  const client = createLifeline({ baseUrl: 'http://127.0.0.1:9', storage: 'memory', fetch: () => new Promise<Response>(() => undefined) });
  const turn = client.turn('turn_hidden_0000001');
  let heard = 0;
  turn.subscribe(() => (heard += 1));
  // The follower connects: a change, and its notification waits for a frame.
  await vi.waitFor(() => expect(turn.getSnapshot().connection.state).toBe('connecting'));
  await Promise.resolve();
  expect(frames.length).toBeGreaterThan(0);
  expect(heard).toBe(0);

  page.visibilityState = 'hidden';
  page.hidden = true;
  page.dispatchEvent(new Event('visibilitychange'));
  expect(heard).toBeGreaterThanOrEqual(1);

  // Hidden: the next change is heard without any frame.
  const framesBefore = frames.length;
  const before = heard;
  turn.close();
  await vi.waitFor(() => expect(heard).toBeGreaterThan(before));
  expect(frames.length).toBe(framesBefore);
  client.dispose();
});
