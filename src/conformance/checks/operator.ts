/**
 * Section 11 (since 1.2): the operator API. Runs only when the run was given the
 * operator's credentials (`--operator-header`); skipped with the reason otherwise, and
 * against a 1.1 server (no receipt route, so no operator API either).
 */
import { sha256Hex } from '../../protocol/integrity.js';
import { CheckSkip, expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import { expectContentType, expectError, expectStatus, jsonOf, request, type Answer } from '../http.js';
import { expectTurnObject, replayAll, type WireTurn } from '../reads.js';
import { holdScript, scriptContent } from '../script.js';
import { eventProblem } from '../wire.js';
import { finishedTurn, sendReceipt, skipWithoutReceipts } from './delivery.js';

function operatorHeaders(context: RunContext): Record<string, string> {
  const headers = context.options.operatorHeaders;
  if (!headers || Object.keys(headers).length === 0) throw new CheckSkip('no operator credentials given (--operator-header): section 11 is not tried');
  return headers;
}

function asOperator(context: RunContext, method: string, path: string, body?: unknown, headers = operatorHeaders(context)): Promise<Answer> {
  return request(context.http, method, `/operator${path}`, {
    headers: { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function operatorTurn(value: unknown, where: string): WireTurn {
  const turn = expectTurnObject(value, where);
  expect(typeof turn['principal'] === 'string', `${where} has no "principal"`);
  return turn;
}

/** Skips a 1.1 server: its receipt route is unknown. */
async function requireReceipts(context: RunContext): Promise<void> {
  skipWithoutReceipts(await sendReceipt(context, `unknown_${context.options.runId}`, { seq: 1, textSha256: await sha256Hex('') }));
}

const list: Check = {
  id: 's11.list',
  title: 'the operator lists turns by state, newest first, with their principal; anything else is 400 invalid_query',
  rule: '§11 "GET /operator/turns?state=<s>…: turn objects with their principal, newest first"; "400 invalid_query for anything else"',
  async run(context) {
    operatorHeaders(context);
    await requireReceipts(context);
    const { turn, end, text } = await finishedTurn(context, 'operator-list');
    await sendReceipt(context, turn.turnId, { seq: end.seq, textSha256: await sha256Hex(`${text} (tampered)`) });
    const answer = await asOperator(context, 'GET', `/turns?state=mismatch&conversation=${turn.conversationId}`);
    expectStatus(answer, 200);
    expectContentType(answer, 'application/json');
    const turns = ((jsonOf(answer) as { turns?: unknown[] } | null)?.turns ?? []).map((item, index) => operatorTurn(item, `turns[${index}]`));
    expect(turns.some((item) => item.id === turn.turnId), `the mismatched turn ${turn.turnId} is not listed under state=mismatch`);
    for (const query of ['state=lost', 'state=live&limit=0', 'state=live&limit=501', 'state=live&since=soon']) {
      expectError(await asOperator(context, 'GET', `/turns?${query}`), 400, 'invalid_query');
    }
    return `listed ${turns.length} mismatched turn(s) of the conversation`;
  },
};

const show: Check = {
  id: 's11.show',
  title: 'the operator sees one turn with its principal and its events, paged as a replay',
  rule: '§11 "GET /operator/turns/{turnId}?after=&limit=: the turn object, its principal and its events, paged as in section 3"',
  async run(context) {
    operatorHeaders(context);
    await requireReceipts(context);
    const shape = await context.turns.shape().catch(() => undefined);
    const turnId = shape?.turnId ?? (await finishedTurn(context, 'operator-show')).turn.turnId;
    const answer = await asOperator(context, 'GET', `/turns/${turnId}?after=0&limit=10000`);
    expectStatus(answer, 200);
    const body = jsonOf(answer) as { turn?: unknown; events?: unknown[]; hasMore?: unknown };
    const turn = operatorTurn(body.turn, 'the shown turn');
    expect(turn.id === turnId, `the shown turn is ${turn.id}, not ${turnId}`);
    for (const event of body.events ?? []) expect(eventProblem(event, turnId) === undefined, `an event is invalid: ${eventProblem(event, turnId)}`);
    expectJsonEqual(body.events, (await replayAll(context, turnId, 10_000)).events, "the operator's events");
    expectError(await asOperator(context, 'GET', `/turns/unknown_${context.options.runId}`), 404, 'turn_not_found');
    return `${body.events?.length ?? 0} events, principal ${String(turn['principal'])}`;
  },
};

const end: Check = {
  id: 's11.end',
  title: 'ending a live turn logs turn.end failed with ended_by_operator; ending an ended turn changes nothing',
  rule: '§11 "a live turn ends failed with error code ended_by_operator and the reason; its producer stops. An ended turn answers 200 and changes nothing"',
  async run(context) {
    operatorHeaders(context);
    await requireReceipts(context);
    await context.turns.requireAgent();
    const held = await context.turns.submit(context.conversationId('operator-end'), scriptContent(holdScript(context.options.holdMs)));
    const answer = await asOperator(context, 'POST', `/turns/${held.turnId}/end`, { reason: 'conformance: ended by operator' });
    expectStatus(answer, 200);
    operatorTurn((jsonOf(answer) as { turn?: unknown } | null)?.turn, 'the end answer');
    const { events } = await replayAll(context, held.turnId, 10_000);
    const last = events.at(-1);
    expect(last?.type === 'turn.end' && last['status'] === 'failed', `the log ends with ${JSON.stringify(last)}, expected turn.end failed`);
    expect((last?.['error'] as { code?: unknown } | undefined)?.code === 'ended_by_operator', `turn.end's error is ${JSON.stringify(last?.['error'])}, expected code ended_by_operator`);
    const again = await asOperator(context, 'POST', `/turns/${held.turnId}/end`, { reason: 'again' });
    expectStatus(again, 200);
    expectJsonEqual((await replayAll(context, held.turnId, 10_000)).events, events, 'the events after ending an ended turn');
    return `ended at seq ${last?.seq}`;
  },
};

const hidden: Check = {
  id: 's11.hidden',
  title: 'without the operator credentials every /operator route answers 404 not_found',
  rule: '§11 "while off, or for a request it refuses, every /operator route answers 404 not_found"',
  async run(context) {
    operatorHeaders(context);
    await requireReceipts(context);
    const none = Object.fromEntries(Object.keys(operatorHeaders(context)).map((name) => [name, '']));
    const probes: [string, string, unknown?][] = [
      ['GET', '/turns?state=live'],
      ['GET', `/turns/unknown_${context.options.runId}`],
      ['POST', `/turns/unknown_${context.options.runId}/end`, { reason: 'no' }],
      ['GET', '/elsewhere'],
    ];
    for (const [method, path, body] of probes) expectError(await asOperator(context, method, path, body, none), 404, 'not_found');
    return `${probes.length} routes hidden`;
  },
};

export const operatorChecks: readonly Check[] = [list, show, end, hidden];
