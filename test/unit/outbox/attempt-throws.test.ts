/**
 * A throw inside an attempt (a bug of the client's own, here its jitter source) fails the
 * entry visibly: before, it escaped as an unhandled rejection and left the entry `sending`
 * until a reload (found by the simulator, test/sim/, class `throws`).
 */
import { afterEach, expect, it } from 'vitest';
import { createOutbox, type OutboxController } from '../../../src/outbox/outbox.js';
import { baseDeps, createFakeFetch, createFakeStorage, createRecorder, errorAnswer, until } from './helpers.js';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
let outbox: OutboxController | undefined;
afterEach(() => {
  outbox?.dispose();
  process.off('unhandledRejection', onUnhandled);
});

it('fails the entry with the thrown error, reported, kept for retry()', async () => {
  process.on('unhandledRejection', onUnhandled);
  const storage = createFakeStorage();
  const recorder = createRecorder();
  outbox = createOutbox(
    baseDeps({
      storage,
      emit: recorder.emit,
      fetch: createFakeFetch(() => errorAnswer(503)),
      // The 503's backoff draws its jitter: that draw throws.
      random: () => {
        throw new Error('a bug');
      },
    }),
  );
  const { operationId } = outbox.enqueue('conv', 'hello');
  await until(() => outbox!.entries.getSnapshot()[0]?.state === 'failed', 'the entry failed');
  expect(recorder.of('failed')).toEqual([expect.objectContaining({ scope: 'submit', id: operationId, error: expect.objectContaining({ message: 'a bug' }) })]);
  await until(() => storage.rows.get(operationId)?.state === 'failed', 'the failure stored');
  await new Promise((resolve) => setImmediate(resolve));
  expect(unhandled).toEqual([]);
});
