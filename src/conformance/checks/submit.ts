/** Section 1: submitting a message, and idempotency. */
import { CheckFailure, expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import { errorBodyProblem, expectContentType, expectError, expectStatus, jsonOf, postJson, request, type Answer } from '../http.js';
import { listTurns } from '../reads.js';

const messagesPath = (conversationId: string): string => `/conversations/${conversationId}/messages`;

async function expectTurnCount(context: RunContext, conversationId: string, count: number, why: string): Promise<void> {
  const turns = await listTurns(context, conversationId);
  expect(turns.length === count, `${why}: the conversation lists ${turns.length} turns, expected ${count}`);
}

const accepted: Check = {
  id: 's1.accepted',
  title: 'a new key answers 202 {turnId, messageId, conversationId, status: "pending"} as JSON',
  rule: '§1 "202 Accepted | first time this key is seen"',
  async run(context) {
    const conversationId = context.conversationId('accepted');
    const turn = await context.turns.submit(conversationId, 'Hello from lifeline-chat-conformance');
    expectContentType(turn.answer, 'application/json');
    expect(turn.turnId.length >= 21, `turnId ${turn.turnId} is shorter than 21 characters: server-minted ids must be unguessable`);
    return `turn ${turn.turnId}`;
  },
};

const replayed: Check = {
  id: 's1.idempotent-replay',
  title: 'the same key and body answer 200, Idempotent-Replayed: true, the same body; no new turn',
  rule: '§1 "200 OK + header Idempotent-Replayed: true … the same turnId; no new turn"',
  async run(context) {
    const conversationId = context.conversationId('replayed');
    const first = await context.turns.submit(conversationId, { text: 'once', n: 1 });
    const again = await postJson(context.http, messagesPath(conversationId), { content: { text: 'once', n: 1 } }, { 'idempotency-key': first.key });
    expectStatus(again, 200);
    expect(again.headers.get('idempotent-replayed') === 'true', `Idempotent-Replayed is ${JSON.stringify(again.headers.get('idempotent-replayed'))}, expected "true"`);
    expectJsonEqual(jsonOf(again), jsonOf(first.answer), 'the replayed answer');
    await expectTurnCount(context, conversationId, 1, 'after a replayed submission');
    return `turn ${first.turnId} answered twice`;
  },
};

const reusedBody: Check = {
  id: 's1.key-reused-body',
  title: 'the same key with another body answers 422 idempotency_key_reused',
  rule: '§1 "422 | the same key was used before with another conversation or body"',
  async run(context) {
    const conversationId = context.conversationId('reused-body');
    const first = await context.turns.submit(conversationId, 'first body');
    const other = await postJson(context.http, messagesPath(conversationId), { content: 'another body' }, { 'idempotency-key': first.key });
    expectError(other, 422, 'idempotency_key_reused');
    await expectTurnCount(context, conversationId, 1, 'after a reused key');
    return '422 idempotency_key_reused';
  },
};

const reusedConversation: Check = {
  id: 's1.key-reused-conversation',
  title: 'the same key and body in another conversation answers 422 idempotency_key_reused',
  rule: '§1 "The request\'s fingerprint is its conversation id plus its body"',
  async run(context) {
    const first = await context.turns.submit(context.conversationId('reused-a'), 'same body');
    const otherConversation = context.conversationId('reused-b');
    const other = await postJson(context.http, messagesPath(otherConversation), { content: 'same body' }, { 'idempotency-key': first.key });
    expectError(other, 422, 'idempotency_key_reused');
    await expectTurnCount(context, otherConversation, 0, 'after a reused key');
    return '422 idempotency_key_reused';
  },
};

const CONCURRENT = 6;

const concurrent: Check = {
  id: 's1.concurrent-key',
  title: `${CONCURRENT} concurrent requests with one key make one turn (202 once; others 200 with the same turnId, or 409)`,
  rule: '§1 "409 | the same key is still being processed by a concurrent request"',
  async run(context) {
    const conversationId = context.conversationId('concurrent');
    const key = context.newKey();
    const answers = await Promise.all(
      Array.from({ length: CONCURRENT }, () => postJson(context.http, messagesPath(conversationId), { content: 'concurrent' }, { 'idempotency-key': key })),
    );
    const statuses = answers.map((answer) => answer.status);
    const unexpected = answers.find((answer) => ![200, 202, 409].includes(answer.status));
    if (unexpected) throw new CheckFailure(`a concurrent duplicate answered ${unexpected.status}: ${unexpected.text}`);
    expect(statuses.filter((status) => status === 202).length === 1, `answers were ${statuses.join(', ')}: expected exactly one 202`);
    const turnIds = new Set(answers.filter((answer) => answer.status !== 409).map((answer) => (jsonOf(answer) as { turnId?: unknown }).turnId));
    expect(turnIds.size === 1, `the answers name ${turnIds.size} different turns: ${[...turnIds].join(', ')}`);
    for (const answer of answers.filter((candidate) => candidate.status === 409)) {
      const problem = errorBodyProblem(answer);
      if (problem !== undefined) throw new CheckFailure(`a 409 answer: ${problem}`);
    }
    await expectTurnCount(context, conversationId, 1, 'after concurrent duplicates');
    return `answers ${statuses.join(', ')}`;
  },
};

async function expectRefused(context: RunContext, conversationId: string, attempts: readonly { what: string; send: () => Promise<Answer>; status: number }[]): Promise<void> {
  for (const attempt of attempts) {
    const answer = await attempt.send();
    if (answer.status !== attempt.status) throw new CheckFailure(`${attempt.what} answered ${answer.status}, expected ${attempt.status}: ${answer.text.slice(0, 160)}`);
    const problem = errorBodyProblem(answer);
    if (problem !== undefined) throw new CheckFailure(`${attempt.what} answered ${attempt.status} but ${problem}`);
  }
  await expectTurnCount(context, conversationId, 0, 'after refused submissions');
}

const BAD_KEYS: readonly [string, string | undefined][] = [
  ['no Idempotency-Key', undefined],
  ['a 15-character key', 'abcdefghijklmno'],
  ['a 129-character key', 'k'.repeat(129)],
  ['a key with a space', 'conformance key 123'],
  ['a key with "!"', 'conformance-key-12!'],
];

const badKeys: Check = {
  id: 's1.bad-keys',
  title: 'a missing or malformed Idempotency-Key answers 400 and creates nothing',
  rule: '§1 "Idempotency-Key: <operationId> (required, 16–128 characters of [A-Za-z0-9_-])"; "400 | no or malformed Idempotency-Key"',
  async run(context) {
    const conversationId = context.conversationId('bad-keys');
    await expectRefused(
      context,
      conversationId,
      BAD_KEYS.map(([what, key]) => ({
        what,
        status: 400,
        send: () => postJson(context.http, messagesPath(conversationId), { content: 'bad key' }, key === undefined ? {} : { 'idempotency-key': key }),
      })),
    );
    return `${BAD_KEYS.length} keys refused`;
  },
};

const BAD_BODIES: readonly [string, string][] = [
  ['invalid JSON', '{"content": '],
  ['a JSON array', '[]'],
  ['no content', '{}'],
  ['a number as content', '{"content": 5}'],
  ['null content', '{"content": null}'],
  ['an array as content', '{"content": ["a"]}'],
];

const badBodies: Check = {
  id: 's1.bad-bodies',
  title: 'invalid JSON or a body of the wrong shape answers 400 and creates nothing',
  rule: '§1 "Body: {"content": <string or JSON object>}"; "400 | … invalid JSON, wrong shape"',
  async run(context) {
    const conversationId = context.conversationId('bad-bodies');
    await expectRefused(
      context,
      conversationId,
      BAD_BODIES.map(([what, body]) => ({
        what,
        status: 400,
        send: () =>
          request(context.http, 'POST', messagesPath(conversationId), {
            headers: { 'content-type': 'application/json', 'idempotency-key': context.newKey() },
            body,
          }),
      })),
    );
    return `${BAD_BODIES.length} bodies refused`;
  },
};

const tooLarge: Check = {
  id: 's1.too-large',
  title: 'a body over 64 KiB answers 413 and creates nothing',
  rule: '§1 "(at most 64 KiB encoded)"; "413 | body too large"',
  async run(context) {
    const conversationId = context.conversationId('too-large');
    const content = 'x'.repeat(64 * 1024 + 1);
    await expectRefused(context, conversationId, [
      { what: 'a 64 KiB + 1 body', status: 413, send: () => postJson(context.http, messagesPath(conversationId), { content }, { 'idempotency-key': context.newKey() }) },
    ]);
    return '413';
  },
};

export const submitChecks: readonly Check[] = [accepted, replayed, reusedBody, reusedConversation, concurrent, badKeys, badBodies, tooLarge];
