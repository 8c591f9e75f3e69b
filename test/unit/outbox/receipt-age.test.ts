/**
 * A delivery receipt whose next retry would land past its age limit is dropped at once,
 * visibly (`receipt` diagnostic `dropped`), instead of waiting out one more backoff for a
 * receipt that could only be dropped when it wakes (the retry step shared with the
 * follower and the outbox: a retry must land before its loop's deadline, core/backoff.ts).
 */
import { describe, expect, it } from 'vitest';
import { resolveRetryPolicy } from '../../../src/core/backoff.js';
import { createReceiptQueue } from '../../../src/outbox/receipts.js';
import { realClock } from '../../../src/ports/clock.js';
import { realTimers } from '../../../src/ports/timers.js';
import { createRecorder, until } from './helpers.js';

function queueAnswering(status: number, headers: Record<string, string>, maxAgeMs: number) {
  const recorder = createRecorder();
  const posts: string[] = [];
  const queue = createReceiptQueue({
    baseUrl: 'http://127.0.0.1:1',
    fetch: async (input) => {
      posts.push(String(input));
      return Response.json({ error: { code: 'unavailable', message: 'busy' } }, { status, headers });
    },
    headers: async () => ({}),
    clock: realClock,
    timers: realTimers,
    namespace: 'receipt-age',
    retry: resolveRetryPolicy({ maxRetryAfterMs: 600_000 }),
    random: () => 0.5,
    network: null,
    emit: recorder.emit,
    onMismatch: () => undefined,
    storage: null,
    maxAgeMs,
  });
  return { queue, recorder, posts };
}

describe('a receipt no retry fits into before its age limit', () => {
  it('is dropped after its one attempt, with no retry announced', async () => {
    // Retry-After 10 min against a 1 min age limit: the retry could only land past it.
    const { queue, recorder, posts } = queueAnswering(503, { 'retry-after': '600' }, 60_000);
    try {
      queue.add('turn_1', 3, 'the answer');
      await until(() => recorder.of('receipt').length > 0, 'a receipt diagnostic');
      expect(recorder.of('receipt').map((d) => d.outcome)).toEqual(['dropped']);
      expect(posts).toHaveLength(1);
    } finally {
      queue.dispose();
    }
  });

  it('is retried, visibly, when the retry lands inside its age', async () => {
    const { queue, recorder, posts } = queueAnswering(503, { 'retry-after': '600' }, 3_600_000);
    try {
      queue.add('turn_1', 3, 'the answer');
      await until(() => recorder.of('receipt').length > 0, 'a receipt diagnostic');
      expect(recorder.of('receipt')).toMatchObject([{ outcome: 'retry', delayMs: 600_000 }]);
      expect(posts).toHaveLength(1);
    } finally {
      queue.dispose();
    }
  });
});
