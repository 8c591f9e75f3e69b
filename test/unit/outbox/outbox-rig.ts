/**
 * The outbox tests' rig: an outbox over fake storage and a scripted fetch, disposed after
 * each test, and the fake clock most of them run on (wall time starts at T0).
 */
import { beforeEach, vi } from 'vitest';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import type { OutboxEntry } from '../../../src/types.js';
import { baseDeps, createFakeFetch, createFakeStorage, createRecorder, type Responder, type TestDeps } from './helpers.js';

export const T0 = Date.UTC(2030, 0, 1, 9, 0, 0);

let outboxes: OutboxController[] = [];

/** Disposed with the others after the test. */
export function track(outbox: OutboxController): void {
  outboxes.push(outbox);
}

/** For `afterEach`: disposes every outbox `setup` made and restores real timers. */
export function disposeOutboxes(): void {
  for (const outbox of outboxes) outbox.dispose();
  outboxes = [];
  vi.useRealTimers();
}

/** Call inside a `describe`: its tests run on fake timers, the wall clock at T0. */
export function useFakeClock(): void {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    vi.setSystemTime(T0);
  });
}

/** An outbox answering through `responder`, with its storage, fetch and diagnostics to look at. */
export function setup(responder: Responder, overrides: TestDeps = {}) {
  const storage = createFakeStorage();
  const fetch = createFakeFetch(responder);
  const recorder = createRecorder();
  const acceptedEntries: OutboxEntry[] = [];
  const outbox = createOutbox(
    baseDeps({
      storage,
      fetch,
      emit: recorder.emit,
      onAccepted: (entry) => void acceptedEntries.push(entry),
      ...overrides,
    }),
  );
  outboxes.push(outbox);
  const entry = (id: string) => outbox.entries.getSnapshot().find((e) => e.operationId === id);
  return { storage, fetch, recorder, outbox, acceptedEntries, entry };
}
