/** Section 3: replaying a turn as JSON, its paging, and its errors. */
import { CheckFailure, expect, expectJsonEqual } from '../check.js';
import type { Check } from '../run-context.js';
import { openFollow } from '../event-stream.js';
import { expectError, request } from '../http.js';
import { replayAll, replayPage } from '../reads.js';
import { holdScript, scriptContent } from '../script.js';
import { INVALID_RESUME_POINTS } from './resume.js';

const equalsStream: Check = {
  id: 's3.replay-equals-stream',
  title: 'the replay of a finished turn (after=0) holds exactly the events the stream sent',
  rule: '§3 "the same event objects as the data lines of section 2, seq > after"',
  async run(context) {
    const turn = await context.turns.shape();
    const { events, pages } = await replayAll(context, turn.turnId, 10_000);
    expectJsonEqual(events, turn.events, 'the replayed events');
    return `${events.length} events in ${pages.length} page(s)`;
  },
};

const turnObject: Check = {
  id: 's3.turn-object',
  title: 'the replay\'s turn object names the turn, its status and its lastSeq',
  rule: '§3 "{"turn":{"id","conversationId","messageId","status","lastSeq","createdAt","updatedAt","content"}"',
  async run(context) {
    const turn = await context.turns.shape();
    const { turn: object } = await replayPage(context, turn.turnId, '?after=0');
    expect(object.id === turn.turnId, `turn.id ${object.id} is not ${turn.turnId}`);
    expect(object.conversationId === turn.conversationId, `turn.conversationId ${object.conversationId} is not ${turn.conversationId}`);
    expect(object.messageId === turn.messageId, `turn.messageId ${object.messageId} is not ${turn.messageId}`);
    const end = turn.events.at(-1);
    expect(object.status === end?.['status'], `turn.status ${object.status} differs from turn.end's status ${JSON.stringify(end?.['status'])}`);
    expect(object.lastSeq === turn.events.length, `turn.lastSeq ${object.lastSeq}, but the turn has ${turn.events.length} events`);
    return `status ${object.status}, lastSeq ${object.lastSeq}`;
  },
};

const content: Check = {
  id: 's3.turn-content',
  title: 'turn objects carry the message\'s content exactly as accepted (string and object)',
  rule: '§3 "content (since 1.1) is the content of the message that started the turn, exactly as accepted"',
  async run(context) {
    const shape = await context.turns.shape();
    const { turn: object } = await replayPage(context, shape.turnId, '?after=0&limit=1');
    expect('content' in object, 'the turn object has no content');
    expectJsonEqual(object.content, shape.content, 'turn.content of an object message');
    const text = 'plain text content: naïve 😀';
    const plain = await context.turns.submit(context.conversationId('content'), text);
    const { turn: plainObject } = await replayPage(context, plain.turnId, '?after=0&limit=1');
    expect(plainObject.content === text, `turn.content of a string message is ${JSON.stringify(plainObject.content)}`);
    return 'content kept';
  },
};

const paging: Check = {
  id: 's3.paging',
  title: 'limit pages the replay: at least one event per page, no more than limit, hasMore true exactly until the last',
  rule: '§3 "hasMore is true exactly when events after the last one returned are already logged … always at least one event when any is after after"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const limit of [1, 3]) {
      const { pages, events } = await replayAll(context, turn.turnId, limit, turn.events.length + 1);
      pages.forEach((page, index) => {
        const last = index === pages.length - 1;
        expect(page.events.length >= 1 && page.events.length <= limit, `limit=${limit}: page ${index + 1} has ${page.events.length} events`);
        expect(page.hasMore === !last, `limit=${limit}: page ${index + 1} of ${pages.length} has hasMore ${page.hasMore}`);
      });
      expectJsonEqual(events, turn.events, `limit=${limit}: the paged events`);
    }
    const end = await replayPage(context, turn.turnId, `?after=${turn.events.length}`);
    expect(end.events.length === 0 && !end.hasMore, `after=${turn.events.length} (the end) gave ${end.events.length} events, hasMore ${end.hasMore}`);
    return `limit=1 and limit=3 page to the same ${turn.events.length} events`;
  },
};

const afterErrors: Check = {
  id: 's3.after-errors',
  title: 'replay after= follows the resume-point rules: invalid → 400 invalid_resume_point, beyond → 400 resume_point_ahead',
  rule: '§3 "after follows the resume-point rules and errors of section 2"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const value of INVALID_RESUME_POINTS) {
      expectError(await request(context.http, 'GET', `/turns/${turn.turnId}?after=${encodeURIComponent(value)}`), 400, 'invalid_resume_point');
    }
    expectError(await request(context.http, 'GET', `/turns/${turn.turnId}?after=${turn.events.length + 1}`), 400, 'resume_point_ahead');
    return `${INVALID_RESUME_POINTS.length + 1} requests refused`;
  },
};

const INVALID_LIMITS = ['0', '10001', '-1', 'abc', '1.5', '', '1e3'];

const limitErrors: Check = {
  id: 's3.limit-errors',
  title: `replay limit outside 1…10 000 (${INVALID_LIMITS.map((value) => JSON.stringify(value)).join(', ')}) answers 400 invalid_limit; 10 000 is accepted`,
  rule: '§3 "limit is an integer from 1 to 10 000, default 1000 (anything else: 400 invalid_limit)"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const value of INVALID_LIMITS) {
      expectError(await request(context.http, 'GET', `/turns/${turn.turnId}?limit=${encodeURIComponent(value)}`), 400, 'invalid_limit');
    }
    await replayPage(context, turn.turnId, '?limit=10000');
    return `${INVALID_LIMITS.length} limits refused`;
  },
};

const unknown: Check = {
  id: 's3.unknown-turn',
  title: 'replaying an unknown turn answers 404 turn_not_found',
  rule: '§3 "(invalid_resume_point, resume_point_ahead, turn_not_found, …)"',
  async run(context) {
    expectError(await request(context.http, 'GET', `/turns/unknown_${context.options.runId}`), 404, 'turn_not_found');
    return '404 turn_not_found';
  },
};

const live: Check = {
  id: 's3.live-turn',
  title: 'replaying a live turn answers status streaming with the events logged so far, hasMore false',
  rule: '§3 "the events it missed, live or finished"; "status … streaming"',
  async run(context) {
    await context.turns.requireAgent();
    const turn = await context.turns.submit(context.conversationId('replay-live'), scriptContent(holdScript(context.options.holdMs)));
    const stream = await openFollow(context.http, turn.turnId);
    try {
      const started = await stream.until((items) => items.some(({ item }) => item.kind === 'message' && item.event === 'delta'), context.options.timeoutMs);
      expect(started, 'the held turn sent no delta');
      const page = await replayPage(context, turn.turnId, '?after=0');
      expect(page.turn.status === 'streaming', `turn.status is ${page.turn.status}, expected streaming`);
      expect(!page.hasMore, 'hasMore is true with limit 1000 on a short live turn');
      expect(page.turn.lastSeq === page.events.length, `turn.lastSeq ${page.turn.lastSeq}, but ${page.events.length} events came back`);
      page.events.forEach((event, index) => {
        if (event.seq !== index + 1) throw new CheckFailure(`event ${index + 1} has seq ${event.seq}`);
      });
      expect(page.events.every((event) => event.type !== 'turn.end'), 'the live turn\'s replay holds a turn.end');
      return `${page.events.length} events, status streaming`;
    } finally {
      stream.close();
      await request(context.http, 'POST', `/turns/${turn.turnId}/cancel`).catch(() => undefined);
    }
  },
};

export const replayChecks: readonly Check[] = [equalsStream, turnObject, content, paging, afterErrors, limitErrors, unknown, live];
