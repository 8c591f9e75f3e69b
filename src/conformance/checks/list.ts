/** Section 4: listing a conversation's turns. */
import { expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import type { SubmittedTurn } from '../fixtures.js';
import { expectContentType, expectError, expectStatus, jsonOf, request } from '../http.js';
import { listTurns } from '../reads.js';

/** Three turns submitted one after another in a fresh conversation, oldest first. */
async function threeTurns(context: RunContext, name: string): Promise<{ conversationId: string; turns: SubmittedTurn[] }> {
  const conversationId = context.conversationId(name);
  const turns: SubmittedTurn[] = [];
  for (const content of ['first', { second: true }, 'third']) turns.push(await context.turns.submit(conversationId, content));
  return { conversationId, turns };
}

const order: Check = {
  id: 's4.order',
  title: 'a conversation lists its turns newest first, as turn objects with their content',
  rule: '§4 "200 {"turns":[ <turn objects as in section 3>, newest first ]}"; §3 "(list answers carry it too)"',
  async run(context) {
    const { conversationId, turns } = await threeTurns(context, 'order');
    const listed = await listTurns(context, conversationId);
    const expected = [...turns].reverse();
    expect(listed.length === 3, `the conversation lists ${listed.length} turns, expected 3`);
    expect(
      listed.every((turn, index) => turn.id === expected[index]?.turnId),
      `listed ${listed.map((turn) => turn.id).join(', ')}, expected newest first ${expected.map((turn) => turn.turnId).join(', ')}`,
    );
    listed.forEach((turn, index) => {
      expect(turn.conversationId === conversationId, `turns[${index}].conversationId is ${turn.conversationId}`);
      expect('content' in turn, `turns[${index}] has no content`);
      expectJsonEqual(turn.content, expected[index]?.content, `turns[${index}].content`);
    });
    return '3 turns newest first';
  },
};

const limit: Check = {
  id: 's4.limit',
  title: 'limit=n lists the n newest turns; 1 and 200 are accepted',
  rule: '§4 "limit from 1 to 200, default 50"',
  async run(context) {
    const { conversationId, turns } = await threeTurns(context, 'limit');
    const two = await listTurns(context, conversationId, '2');
    expect(two.length === 2, `limit=2 listed ${two.length} turns`);
    expect(two[0]?.id === turns[2]?.turnId && two[1]?.id === turns[1]?.turnId, 'limit=2 did not list the two newest turns, newest first');
    const one = await listTurns(context, conversationId, '1');
    expect(one.length === 1 && one[0]?.id === turns[2]?.turnId, 'limit=1 did not list the newest turn alone');
    expect((await listTurns(context, conversationId, '200')).length === 3, 'limit=200 did not list all 3 turns');
    return 'limits 1, 2, 200';
  },
};

const INVALID_LIMITS = ['0', '201', '-1', 'abc', '2.5', ''];

const limitErrors: Check = {
  id: 's4.limit-errors',
  title: `list limit outside 1…200 (${INVALID_LIMITS.map((value) => JSON.stringify(value)).join(', ')}) answers 400 invalid_limit`,
  rule: '§4 "(anything else: 400 invalid_limit)"',
  async run(context) {
    const conversationId = context.conversationId('limit-errors');
    for (const value of INVALID_LIMITS) {
      expectError(await request(context.http, 'GET', `/conversations/${conversationId}/turns?limit=${encodeURIComponent(value)}`), 400, 'invalid_limit');
    }
    return `${INVALID_LIMITS.length} limits refused`;
  },
};

const empty: Check = {
  id: 's4.empty',
  title: 'a conversation never used lists as {"turns":[]}',
  rule: '§4 "A conversation never used lists as {"turns":[]}"',
  async run(context) {
    const answer = await request(context.http, 'GET', `/conversations/${context.conversationId('never-used')}/turns`);
    expectStatus(answer, 200);
    expectContentType(answer, 'application/json');
    expectJsonEqual(jsonOf(answer), { turns: [] }, 'the list of a conversation never used');
    return '{"turns":[]}';
  },
};

export const listChecks: readonly Check[] = [order, limit, limitErrors, empty];
