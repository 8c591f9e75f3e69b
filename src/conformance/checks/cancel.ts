/** Section 5: cancelling a turn. */
import { CheckFailure, expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import { openFollow } from '../event-stream.js';
import { eventsOf } from '../fixtures.js';
import { expectContentType, expectError, expectStatus, jsonOf, request } from '../http.js';
import { expectTurnObject, replayAll, type WireTurn } from '../reads.js';
import { holdScript, scriptContent } from '../script.js';
import { expectIntegrity, expectWholeTurn } from './stream.js';

async function cancel(context: RunContext, turnId: string, status: number): Promise<WireTurn> {
  const answer = await request(context.http, 'POST', `/turns/${turnId}/cancel`);
  expectStatus(answer, status);
  expectContentType(answer, 'application/json');
  const turn = expectTurnObject((jsonOf(answer) as { turn?: unknown } | null)?.turn, `POST /turns/${turnId}/cancel turn`);
  expect(turn.id === turnId, `the cancel answer names turn ${turn.id}, not ${turnId}`);
  return turn;
}

const live: Check = {
  id: 's5.cancel-live',
  title: 'cancelling a live turn answers 202 {turn}; the log ends with turn.end status cancelled',
  rule: '§5 "202 {"turn": <turn object>}; the producer stops and the log ends with turn.end status cancelled"',
  async run(context) {
    await context.turns.requireAgent();
    const turn = await context.turns.submit(context.conversationId('cancel-live'), scriptContent(holdScript(context.options.holdMs)));
    const stream = await openFollow(context.http, turn.turnId);
    try {
      const started = await stream.until((items) => items.some(({ item }) => item.kind === 'message' && item.event === 'delta'), context.options.timeoutMs);
      expect(started, 'the held turn sent no delta');
      await cancel(context, turn.turnId, 202);
      const ended = await stream.untilEnd(context.options.turnTimeoutMs);
      expect(ended, `the stream did not end within ${context.options.turnTimeoutMs} ms of the cancel`);
    } finally {
      stream.close();
    }
    const events = eventsOf(stream);
    expectWholeTurn(events, 'the cancelled turn\'s stream');
    expect(events.at(-1)?.['status'] === 'cancelled', `turn.end status ${JSON.stringify(events.at(-1)?.['status'])}, expected cancelled`);
    expectIntegrity(events, 'the cancelled turn');
    const replayed = await replayAll(context, turn.turnId, 10_000);
    expectJsonEqual(replayed.events, events, 'the cancelled turn\'s replay');
    expect(replayed.pages.at(-1)?.turn.status === 'cancelled', `the replayed turn's status is ${replayed.pages.at(-1)?.turn.status}, expected cancelled`);
    return `cancelled after ${events.length - 1} events`;
  },
};

const ended: Check = {
  id: 's5.cancel-ended',
  title: 'cancelling an ended turn answers 200 {turn} and changes nothing',
  rule: '§5 "Cancelling an ended turn answers 200 with the same body shape and changes nothing"',
  async run(context) {
    const submitted = await context.turns.submit(context.conversationId('cancel-ended'), 'finish, then be cancelled');
    const stream = await openFollow(context.http, submitted.turnId);
    const finished = await stream.untilEnd(context.options.turnTimeoutMs);
    stream.close();
    expect(finished, `the turn did not end within ${context.options.turnTimeoutMs} ms`);
    const before = await replayAll(context, submitted.turnId, 10_000);
    const endStatus = before.events.at(-1)?.['status'];
    if (before.events.at(-1)?.type !== 'turn.end') throw new CheckFailure('the finished turn\'s replay does not end with turn.end');
    const turn = await cancel(context, submitted.turnId, 200);
    expect(turn.status === endStatus, `the cancel answer's status is ${turn.status}, but the turn ended ${JSON.stringify(endStatus)}`);
    const after = await replayAll(context, submitted.turnId, 10_000);
    expectJsonEqual(after.events, before.events, 'the events after cancelling an ended turn');
    expect(after.pages.at(-1)?.turn.status === endStatus, `the turn's status changed to ${after.pages.at(-1)?.turn.status}`);
    return `200, status stays ${String(endStatus)}`;
  },
};

const unknown: Check = {
  id: 's5.cancel-unknown',
  title: 'cancelling an unknown turn answers 404 turn_not_found',
  rule: '§5 "404 for an unknown turn"',
  async run(context) {
    expectError(await request(context.http, 'POST', `/turns/unknown_${context.options.runId}/cancel`), 404, 'turn_not_found');
    return '404 turn_not_found';
  },
};

export const cancelChecks: readonly Check[] = [live, ended, unknown];
