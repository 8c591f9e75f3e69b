/**
 * Section 10 (since 1.2): delivery receipts. Against a 1.1 server, whose receipt route
 * answers `404 not_found`, every check is skipped with the reason.
 */
import { sha256Hex } from '../../protocol/integrity.js';
import { CheckFailure, CheckSkip, expect } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import { openFollow } from '../event-stream.js';
import { eventsOf, type FollowedTurn } from '../fixtures.js';
import { errorBodyProblem, expectContentType, expectError, expectStatus, jsonOf, postJson, type Answer } from '../http.js';
import { expectTurnObject, listTurns, replayPage, type WireTurn } from '../reads.js';
import { holdScript, scriptContent } from '../script.js';
import type { WireEvent } from '../wire.js';

const STATES = new Set(['pending', 'delivered', 'mismatch']);

/** The text of a turn's deltas. */
export function textOfEvents(events: readonly WireEvent[]): string {
  return events.map((event) => (event.type === 'delta' && typeof event['text'] === 'string' ? event['text'] : '')).join('');
}

/** `POST /turns/{id}/delivered` with `body`. */
export function sendReceipt(context: RunContext, turnId: string, body: unknown): Promise<Answer> {
  return postJson(context.http, `/turns/${turnId}/delivered`, body, { 'idempotency-key': `receipt-${context.options.runId}-${turnId}`.slice(0, 128) });
}

/** A finished turn of this check's own and its turn.end (a receipt changes the turn: the shared shape turn stays untouched). */
export async function finishedTurn(context: RunContext, name: string): Promise<{ turn: FollowedTurn; end: WireEvent; text: string }> {
  const submitted = await context.turns.submit(context.conversationId(name), `finish, then be receipted (${name})`);
  const stream = await openFollow(context.http, submitted.turnId);
  const ended = await stream.untilEnd(context.options.turnTimeoutMs);
  stream.close();
  expect(ended, `the turn did not end within ${context.options.turnTimeoutMs} ms`);
  const events = eventsOf(stream);
  const end = events.at(-1);
  if (end?.type !== 'turn.end') throw new CheckFailure('the finished turn does not end with turn.end');
  return { turn: { ...submitted, stream, events }, end, text: textOfEvents(events) };
}

/** Skips a 1.1 server (the route is unknown: `404 not_found`, not `turn_not_found`). */
export function skipWithoutReceipts(answer: Answer): void {
  if (answer.status !== 404 || errorBodyProblem(answer) !== undefined) return;
  const code = (JSON.parse(answer.text) as { error: { code: string } }).error.code;
  if (code !== 'turn_not_found') throw new CheckSkip(`POST /turns/{id}/delivered answered 404 ${code}: a 1.1 server (receipts are protocol 1.2, section 10)`);
}

function deliveryOf(turn: WireTurn, where: string): { state: string; at?: unknown } {
  const delivery = turn['delivery'] as { state?: unknown; at?: unknown } | undefined;
  expect(typeof delivery === 'object' && delivery !== null, `${where} has no "delivery" object`);
  expect(typeof delivery.state === 'string' && STATES.has(delivery.state), `${where}: delivery.state ${JSON.stringify(delivery.state)} is not pending, delivered or mismatch`);
  return delivery as { state: string; at?: unknown };
}

function receiptTurn(answer: Answer, where: string): WireTurn {
  expectStatus(answer, 200);
  expectContentType(answer, 'application/json');
  return expectTurnObject((jsonOf(answer) as { turn?: unknown } | null)?.turn, where);
}

const delivered: Check = {
  id: 's10.delivered',
  title: 'a receipt with the turn.end seq and the text hash answers 200 {turn} with delivery delivered, once',
  rule: '§10 "200 recorded, or recorded before (idempotent)"; "delivery": {"state", "at"?: <ISO 8601 of the first receipt>}',
  async run(context) {
    const { turn, end, text } = await finishedTurn(context, 'receipt');
    const before = (await replayPage(context, turn.turnId, '?after=0')).turn;
    expect(deliveryOf(before, 'the replayed turn').state === 'pending', 'a turn with no receipt is not pending');
    const body = { seq: end.seq, textSha256: await sha256Hex(text) };
    const first = await sendReceipt(context, turn.turnId, body);
    skipWithoutReceipts(first);
    const recorded = deliveryOf(receiptTurn(first, 'the receipt answer'), 'the receipt answer');
    expect(recorded.state === 'delivered', `delivery.state is ${recorded.state} after a matching receipt`);
    expect(typeof recorded.at === 'string' && Number.isFinite(Date.parse(recorded.at)), `delivery.at ${JSON.stringify(recorded.at)} is not an ISO 8601 time`);
    const again = deliveryOf(receiptTurn(await sendReceipt(context, turn.turnId, body), 'the repeated receipt answer'), 'the repeated receipt answer');
    expect(again.at === recorded.at, `a repeated receipt moved delivery.at from ${String(recorded.at)} to ${String(again.at)}`);
    const listed = (await listTurns(context, turn.conversationId)).find((item) => item.id === turn.turnId);
    expect(listed && deliveryOf(listed, 'the listed turn').state === 'delivered', 'the conversation list does not show the turn delivered');
    return `delivered at ${String(recorded.at)}`;
  },
};

const mismatch: Check = {
  id: 's10.mismatch',
  title: 'a receipt whose textSha256 differs answers 409 delivery_mismatch and is recorded as mismatch',
  rule: '§10 "409 delivery_mismatch: textSha256 differs from the server\'s; recorded as mismatch"',
  async run(context) {
    const { turn, end, text } = await finishedTurn(context, 'mismatch');
    const answer = await sendReceipt(context, turn.turnId, { seq: end.seq, textSha256: await sha256Hex(`${text} (tampered)`) });
    skipWithoutReceipts(answer);
    expectError(answer, 409, 'delivery_mismatch');
    const after = (await replayPage(context, turn.turnId, '?after=0')).turn;
    expect(deliveryOf(after, 'the replayed turn').state === 'mismatch', 'the turn is not recorded as mismatch');
    return '409, recorded as mismatch';
  },
};

const refused: Check = {
  id: 's10.refused',
  title: 'receipts for a live turn, the wrong seq, a malformed body or an unknown turn answer 400 turn_not_ended, 400 invalid_receipt, 404',
  rule: '§10 "400 turn_not_ended"; "400 invalid_receipt: seq is not the turn.end seq, or the body is malformed"; "404 as on every route"',
  async run(context) {
    const { turn, end, text } = await finishedTurn(context, 'refused');
    const textSha256 = await sha256Hex(text);
    const first = await sendReceipt(context, turn.turnId, { seq: end.seq + 1, textSha256 });
    skipWithoutReceipts(first);
    expectError(first, 400, 'invalid_receipt');
    expectError(await sendReceipt(context, turn.turnId, { seq: end.seq }), 400, 'invalid_receipt');
    expectError(await sendReceipt(context, turn.turnId, 'not an object'), 400, 'invalid_receipt');
    expectError(await sendReceipt(context, `unknown_${context.options.runId}`, { seq: 1, textSha256 }), 404, 'turn_not_found');
    try {
      await context.turns.requireAgent();
    } catch {
      return 'seq, body and unknown turn refused (no conformance agent: the live turn was not tried)';
    }
    const held = await context.turns.submit(context.conversationId('receipt-live'), scriptContent(holdScript(context.options.holdMs)));
    expectError(await sendReceipt(context, held.turnId, { seq: 1, textSha256 }), 400, 'turn_not_ended');
    await postJson(context.http, `/turns/${held.turnId}/cancel`, {});
    return 'live turn, seq, body and unknown turn refused';
  },
};

export const deliveryChecks: readonly Check[] = [delivered, mismatch, refused];
