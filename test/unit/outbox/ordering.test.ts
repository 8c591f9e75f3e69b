/**
 * Property: whatever the server answers, per conversation no entry is posted while an
 * earlier one is still pending; every entry ends accepted or failed; nothing is posted
 * for an entry after it ended.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { createOutbox } from '../../../src/outbox/outbox.js';
import type { OutboxEntry } from '../../../src/types.js';
import { accepted, baseDeps, createFakeFetch, createFakeStorage, errorAnswer, settle, type Call } from './helpers.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  vi.setSystemTime(Date.UTC(2030, 0, 1));
});
afterEach(() => {
  vi.useRealTimers();
});

type Answer = 'accept' | 'replay' | 'unavailable' | 'in-flight' | 'reject' | 'network';

const answer = (kind: Answer, call: Call): Response | Promise<Response> => {
  switch (kind) {
    case 'accept':
      return accepted(call);
    case 'replay':
      return accepted(call, 200);
    case 'unavailable':
      return errorAnswer(503);
    case 'in-flight':
      return errorAnswer(409, 'idempotency_key_in_flight');
    case 'reject':
      return errorAnswer(422, 'idempotency_key_reused');
    case 'network':
      return Promise.reject(new TypeError('fetch failed'));
  }
};

const answerArb = fc.constantFrom<Answer>('accept', 'replay', 'unavailable', 'in-flight', 'reject', 'network');

it('keeps per-conversation order under any mix of answers', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ conversation: fc.constantFrom('a', 'b', 'c'), answers: fc.array(answerArb, { maxLength: 4 }) }), {
        minLength: 1,
        maxLength: 6,
      }),
      async (entries) => {
        const violations: string[] = [];
        const scripts = new Map<string, Answer[]>();
        let snapshot: () => readonly OutboxEntry[] = () => [];
        const fetch = createFakeFetch((call) => {
          const all = snapshot();
          const me = all.find((e) => e.operationId === call.key);
          if (me === undefined || me.state === 'accepted' || me.state === 'failed') violations.push(`posted ${call.key} after it ended`);
          for (const earlier of all) {
            if (earlier.conversationId !== me?.conversationId || earlier.order >= me.order) continue;
            if (earlier.state === 'queued' || earlier.state === 'sending') violations.push(`${call.key} overtook ${earlier.operationId}`);
          }
          // Once its script runs out, an entry is accepted.
          return answer(scripts.get(call.key)?.shift() ?? 'accept', call);
        });
        const outbox = createOutbox(
          baseDeps({
            storage: createFakeStorage(),
            fetch,
            emit: () => undefined,
            retry: { initialDelayMs: 10, maxDelayMs: 40 },
            acceptedRetentionMs: 60 * 60_000,
          }),
        );
        snapshot = () => outbox.entries.getSnapshot();
        try {
          const outcomes = new Map<string, 'accepted' | 'failed'>();
          for (const entry of entries) {
            const { operationId } = outbox.enqueue(entry.conversation, 'x');
            scripts.set(operationId, [...entry.answers]);
            const decisive = entry.answers.find((a) => a === 'accept' || a === 'replay' || a === 'reject');
            outcomes.set(operationId, decisive === 'reject' ? 'failed' : 'accepted');
          }
          for (let i = 0; i < 200 && snapshot().some((e) => e.state === 'queued' || e.state === 'sending'); i++) {
            await settle();
            await vi.advanceTimersByTimeAsync(50);
          }
          expect(violations).toEqual([]);
          expect(snapshot().map((e) => e.state).filter((s) => s !== 'accepted' && s !== 'failed')).toEqual([]);
          // The first decisive answer of each script decides; retryable ones only delay.
          for (const [operationId, expected] of outcomes) {
            expect(snapshot().find((e) => e.operationId === operationId)?.state).toBe(expected);
          }
        } finally {
          outbox.dispose();
        }
      },
    ),
    { numRuns: 40 },
  );
});
