/** Section 2: resuming a turn by Last-Event-ID and ?after=, and the resume-point errors. */
import { CheckFailure, expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import { followToEnd, openFollow, type ResumePoint } from '../event-stream.js';
import { eventsOf } from '../fixtures.js';
import { expectError, request, type Answer } from '../http.js';
import { holdScript, scriptContent } from '../script.js';
import { framingProblem } from './stream.js';

/** Runs `work` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

const describe = (resume: ResumePoint): string =>
  resume.lastEventId !== undefined ? `Last-Event-ID: ${JSON.stringify(resume.lastEventId)}` : `?after=${JSON.stringify(resume.after)}`;

/** Resumes the shape turn from every seq before its end with `make(seq)`; each answer must be exactly the suffix. */
async function resumeEverywhere(context: RunContext, make: (seq: number) => ResumePoint): Promise<string> {
  const turn = await context.turns.shape();
  const seqs = turn.events.map((event) => event.seq - 1);
  await eachLimited(seqs, 4, async (after) => {
    const resume = make(after);
    const stream = await followToEnd(context.http, turn.turnId, resume, context.options.turnTimeoutMs);
    if (stream.status !== 200) throw new CheckFailure(`${describe(resume)} answered ${stream.status}, expected 200: ${stream.text.slice(0, 160)}`);
    const problem = framingProblem(stream, turn.turnId);
    if (problem !== undefined) throw new CheckFailure(`${describe(resume)}: ${problem}`);
    expectJsonEqual(eventsOf(stream), turn.events.slice(after), `${describe(resume)}: the events`);
  });
  return `${seqs.length} resume points, each exactly the suffix`;
}

const byHeader: Check = {
  id: 's2.resume-last-event-id',
  title: 'Last-Event-ID: k, for every k before the end of a finished turn, sends exactly the events after k',
  rule: '§2 "Resume point … header Last-Event-ID: <seq>"; "every logged event with seq > after in order"',
  run: (context) => resumeEverywhere(context, (seq) => ({ lastEventId: String(seq) })),
};

const byQuery: Check = {
  id: 's2.resume-after',
  title: '?after=k, for every k before the end of a finished turn, sends exactly the events after k',
  rule: '§2 "Resume point … query ?after=<seq>"; "both forms must work"',
  run: (context) => resumeEverywhere(context, (seq) => ({ after: String(seq) })),
};

const headerWins: Check = {
  id: 's2.header-wins',
  title: 'with both Last-Event-ID and ?after=, the header wins',
  rule: '§2 "Resume point, first one present wins: header Last-Event-ID: <seq>, query ?after=<seq>"',
  async run(context) {
    const turn = await context.turns.shape();
    expect(turn.events.length >= 3, 'the turn is too short to tell the two resume points apart');
    const stream = await followToEnd(context.http, turn.turnId, { lastEventId: '2', after: '1' }, context.options.turnTimeoutMs);
    expect(stream.status === 200, `answered ${stream.status}, expected 200`);
    expectJsonEqual(eventsOf(stream), turn.events.slice(2), 'Last-Event-ID: 2 with ?after=1: the events');
    return 'the suffix after 2';
  },
};

const endNoContent: Check = {
  id: 's2.end-204',
  title: 'a resume point at the end of a finished turn answers 204 (header and query)',
  rule: '§2 "204 No Content when the turn has ended and nothing is after after"',
  async run(context) {
    const turn = await context.turns.shape();
    const last = String(turn.events.length);
    for (const resume of [{ lastEventId: last }, { after: last }]) {
      const stream = await openFollow(context.http, turn.turnId, resume);
      stream.close();
      expect(stream.status === 204, `${describe(resume)} at the end answered ${stream.status}, expected 204`);
    }
    return '204 twice';
  },
};

const ahead: Check = {
  id: 's2.resume-ahead',
  title: 'a resume point beyond the last seq of an ended turn answers 400 resume_point_ahead',
  rule: '§2 "400 a resume point beyond the last logged seq, live or ended (resume_point_ahead)"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const seq of [turn.events.length + 1, 999_999_999]) {
      for (const resume of [{ lastEventId: String(seq) }, { after: String(seq) }]) {
        const stream = await openFollow(context.http, turn.turnId, resume);
        expectError(asAnswer(stream, turn.turnId, resume), 400, 'resume_point_ahead');
      }
    }
    return '400 resume_point_ahead';
  },
};

const aheadLive: Check = {
  id: 's2.resume-ahead-live',
  title: 'a resume point beyond the last seq of a live turn answers 400 resume_point_ahead',
  rule: '§2 "resume_point_ahead … live or ended"',
  async run(context) {
    await context.turns.requireAgent();
    const turn = await context.turns.submit(context.conversationId('ahead-live'), scriptContent(holdScript(context.options.holdMs)));
    const live = await openFollow(context.http, turn.turnId);
    try {
      const started = await live.until((items) => items.some(({ item }) => item.kind === 'message' && item.event === 'delta'), context.options.timeoutMs);
      expect(started, 'the held turn sent no delta');
      const stream = await openFollow(context.http, turn.turnId, { lastEventId: '50' });
      expectError(asAnswer(stream, turn.turnId, { lastEventId: '50' }), 400, 'resume_point_ahead');
    } finally {
      live.close();
      await request(context.http, 'POST', `/turns/${turn.turnId}/cancel`).catch(() => undefined);
    }
    return '400 resume_point_ahead on a live turn';
  },
};

/** Resume points the protocol calls invalid. */
export const INVALID_RESUME_POINTS = ['1e3', '-1', '0x10', '', '1.0', '1234567890123456'];

const invalid: Check = {
  id: 's2.invalid-resume-point',
  title: `invalid resume points (${INVALID_RESUME_POINTS.map((value) => JSON.stringify(value)).join(', ')}) answer 400 invalid_resume_point`,
  rule: '§2 "A resume point is 1 to 15 decimal digits and nothing else (1e3, -1, 0x10, empty are invalid)"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const value of INVALID_RESUME_POINTS) {
      for (const resume of [{ lastEventId: value }, { after: value }]) {
        const stream = await openFollow(context.http, turn.turnId, resume);
        expectError(asAnswer(stream, turn.turnId, resume), 400, 'invalid_resume_point');
      }
    }
    return `${INVALID_RESUME_POINTS.length * 2} requests refused`;
  },
};

const unknown: Check = {
  id: 's2.unknown-turn',
  title: 'following an unknown turn answers 404 turn_not_found',
  rule: '§2 "404 unknown turn (turn_not_found)"',
  async run(context) {
    const stream = await openFollow(context.http, `unknown_${context.options.runId}`);
    expectError(asAnswer(stream, `unknown_${context.options.runId}`, {}), 404, 'turn_not_found');
    return '404 turn_not_found';
  },
};

/** A follow answer seen as a plain answer, for the error checks. */
function asAnswer(stream: { status: number; headers: Headers; text: string; close(): void }, turnId: string, resume: ResumePoint): Answer {
  stream.close();
  return { method: 'GET', path: `/turns/${turnId}/events (${describe(resume)})`, status: stream.status, headers: stream.headers, text: stream.text };
}

export const resumeChecks: readonly Check[] = [byHeader, byQuery, headerWins, endNoContent, ahead, aheadLive, invalid, unknown];
