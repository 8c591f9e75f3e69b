/** Section 2 of docs/protocol.md over real HTTP: following a turn (order, resume, heartbeats, ends). Part of the protocol suite (protocol-suite.ts). */
import { describe, expect, it } from 'vitest';
import { listAnswerSchema, submitAnswerSchema, turnEventSchema } from '../../../src/protocol/schemas.js';
import { controlledAgent, personasAgent, textAgent, PERSONAS } from '../../fixtures/agents.js';
import { newKey, replayAll, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { lastSeq, openStream } from './sse-reader.js';
import { LONG_TEXT, expectError, post, expectSha, seqs, range, type ProtocolKit } from './protocol-kit.js';

export function defineFollowTests(kit: ProtocolKit): void {
  const { setup, submitted, finishedTurn } = kit;
  describe('2. follow', () => {
    it('streams retry first, then every event in order, then closes after turn.end', async () => {
      const server = await setup({ agent: personasAgent(LONG_TEXT), retryMs: 1500 });
      const answer = await submitted(server);
      const stream = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`);
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toBe('text/event-stream');
      expect(stream.response.headers.get('cache-control')).toBe('no-cache');
      expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
      await stream.ended;
      expect(stream.finished).toBe(true);
      expect(stream.raw.startsWith('retry: 1500\n')).toBe(true);
      expect(stream.retries).toEqual([1500]);
      const events = stream.events();
      expect(seqs(events)).toEqual(range(1, events.length));
      for (const message of stream.messages) {
        const event = turnEventSchema.parse(JSON.parse(message.data));
        expect(message.id).toBe(String(event.seq));
        expect(message.event).toBe(event.type);
        expect(event.turnId).toBe(answer.turnId);
      }
      const [start, started, completed] = events;
      expect(start).toMatchObject({ type: 'turn.start', seq: 1, messageId: answer.messageId, conversationId: 'conv-1' });
      expect(Number.isNaN(Date.parse((start as { createdAt: string }).createdAt))).toBe(false);
      expect(started).toMatchObject({ type: 'action', name: 'propose_personas', status: 'started' });
      expect(completed).toMatchObject({ type: 'action', name: 'propose_personas', status: 'completed', output: PERSONAS });
      expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'complete' });
      expect(textOf(events)).toBe(LONG_TEXT);
      await expectSha(events);
      expect(events).toEqual((await replayAll(server.baseUrl, answer.turnId)).events);
    });

    it('resumes with exactly the suffix via Last-Event-ID, via ?after=, and the header wins', async () => {
      const server = await setup({ agent: textAgent(LONG_TEXT, { chunk: 9 }) });
      const { answer, events } = await finishedTurn(server);
      const url = `${server.baseUrl}/turns/${answer.turnId}/events`;
      for (const after of [0, 1, 5, events.length - 1]) {
        const viaHeader = await openStream(url, { 'last-event-id': String(after) });
        const viaQuery = await openStream(`${url}?after=${after}`);
        const both = await openStream(`${url}?after=2`, { 'last-event-id': String(after) });
        for (const stream of [viaHeader, viaQuery, both]) {
          await stream.ended;
          expect(stream.events()).toEqual(events.slice(after));
        }
      }
      expect(events.length).toBeGreaterThan(10);
      // Leading zeros are still decimal digits.
      const padded = await openStream(`${url}?after=0003`);
      await padded.ended;
      expect(seqs(padded.events())[0]).toBe(4);
    });

    it('resumes a live turn mid-stream and receives exactly the rest', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('one ');
      await control.delta('two ');
      const first = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`);
      await first.until((messages) => lastSeq(messages) === 3);
      await control.delta('three ');
      await first.until((messages) => lastSeq(messages) === 4);
      first.close();
      await control.delta('four ');
      await control.action({ callId: 'c1', name: 'lookup', status: 'started', input: { q: 'x' } });
      const second = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`, { 'last-event-id': '4' });
      await second.until((messages) => lastSeq(messages) === 6);
      await control.delta('five');
      await control.end();
      await second.ended;
      const resumed = second.events();
      expect(seqs(resumed)).toEqual([5, 6, 7, 8]);
      const all = [...first.events(), ...resumed];
      expect(seqs(all)).toEqual(range(1, 8));
      expect(textOf(all)).toBe('one two three four five');
      await expectSha(all);
    });

    it('answers 204 for an ended turn with nothing after the resume point', async () => {
      const server = await setup();
      const { answer, turn } = await finishedTurn(server);
      const url = `${server.baseUrl}/turns/${answer.turnId}/events`;
      const viaHeader = await fetch(url, { headers: { 'last-event-id': String(turn.lastSeq) } });
      expect(viaHeader.status).toBe(204);
      expect(await viaHeader.text()).toBe('');
      expect((await fetch(`${url}?after=${turn.lastSeq}`)).status).toBe(204);
    });

    it('answers 400 invalid_resume_point for anything but 1 to 15 digits, in header or query', async () => {
      const server = await setup();
      const { answer } = await finishedTurn(server);
      const url = `${server.baseUrl}/turns/${answer.turnId}/events`;
      const invalid = ['1e3', '-1', '0x10', '', ' 1', '1 ', '+1', '1.0', '1234567890123456', 'abc', '１'];
      for (const value of invalid) {
        await expectError(await fetch(`${url}?after=${encodeURIComponent(value)}`), 400, 'invalid_resume_point');
        if (value.trim() === value || value === '') {
          // fetch trims header whitespace, so only untrimmed-safe values go in the header.
          if (!/^[\x20-\x7e]*$/.test(value)) continue;
          await expectError(await fetch(url, { headers: { 'last-event-id': value } }), 400, 'invalid_resume_point');
        }
      }
      // An invalid header is not rescued by a valid query.
      await expectError(await fetch(`${url}?after=1`, { headers: { 'last-event-id': 'x' } }), 400, 'invalid_resume_point');
      expect((await fetch(`${url}?after=999999999999999`)).status).toBe(400);
    });

    it('answers 400 resume_point_ahead beyond the last logged seq, live or ended', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('a');
      const url = `${server.baseUrl}/turns/${answer.turnId}/events`;
      await expectError(await fetch(url, { headers: { 'last-event-id': '3' } }), 400, 'resume_point_ahead');
      await control.end();
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      await expectError(await fetch(`${url}?after=${turn.lastSeq + 1}`), 400, 'resume_point_ahead');
      await expectError(await fetch(`${url}?after=999999999999999`), 400, 'resume_point_ahead');
    });

    it('answers 404 turn_not_found for unknown turns and other principals, 400 invalid_id for bad ids', async () => {
      const server = await setup({
        authorize: (request) => {
          const user = request.headers.get('x-user');
          if (user === 'mallory') throw Object.assign(new Error('banned'), { status: 403 });
          if (!user) throw new Error('no user');
          return user;
        },
      });
      const answer = await submitMessage(server.baseUrl, 'conv-1', 'x').catch(() => undefined);
      expect(answer).toBeUndefined();
      const created = await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'x' }), {
        'idempotency-key': newKey(),
        'x-user': 'alice',
      });
      const { turnId } = submitAnswerSchema.parse(await created.json());
      await waitForTurnEnd(server.log, turnId);
      const url = `${server.baseUrl}/turns/${turnId}/events`;
      expect((await fetch(url, { headers: { 'x-user': 'alice' } })).status).toBe(200);
      await expectError(await fetch(url, { headers: { 'x-user': 'bob' } }), 404, 'turn_not_found');
      await expectError(await fetch(url), 401, 'unauthorized');
      await expectError(await fetch(url, { headers: { 'x-user': 'mallory' } }), 403, 'forbidden');
      await expectError(await fetch(`${server.baseUrl}/turns/nope_unknown_turn_id_/events`, { headers: { 'x-user': 'alice' } }), 404, 'turn_not_found');
      await expectError(await fetch(`${server.baseUrl}/turns/bad.id/events`, { headers: { 'x-user': 'alice' } }), 400, 'invalid_id');
      // Other principals cannot list, replay or cancel it either.
      await expectError(await fetch(`${server.baseUrl}/turns/${turnId}`, { headers: { 'x-user': 'bob' } }), 404, 'turn_not_found');
      await expectError(await post(`${server.baseUrl}/turns/${turnId}/cancel`, undefined, { 'x-user': 'bob' }), 404, 'turn_not_found');
      const list = listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-1/turns`, { headers: { 'x-user': 'bob' } })).json());
      expect(list.turns).toEqual([]);
    });

    it('serves the event stream whatever the Accept header says (the protocol lists no 406)', async () => {
      const server = await setup();
      const { answer } = await finishedTurn(server);
      const url = `${server.baseUrl}/turns/${answer.turnId}/events`;
      for (const accept of ['application/json', 'text/html, */*;q=0.1']) {
        const response = await fetch(url, { headers: { accept } });
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/event-stream');
        await response.body?.cancel();
      }
    });

    it('sends heartbeats without id while a turn is idle, never logging them', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent, heartbeatMs: 25 });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('a');
      const stream = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`);
      await stream.until((messages) => messages.filter((message) => message.event === 'heartbeat').length >= 2);
      await control.delta('b');
      await control.end();
      await stream.ended;
      const heartbeats = stream.messages.filter((message) => message.event === 'heartbeat');
      expect(heartbeats.length).toBeGreaterThanOrEqual(2);
      for (const heartbeat of heartbeats) {
        expect(heartbeat.id).toBeUndefined();
        expect(heartbeat.data).toBe('{}');
      }
      expect(stream.raw).not.toMatch(/id: [^\n]*\nevent: heartbeat/);
      const events = stream.events();
      expect(seqs(events)).toEqual([1, 2, 3, 4]);
      expect((await replayAll(server.baseUrl, answer.turnId)).events).toEqual(events);
    });

    it('follows through one log waiter per turn however many streams, released when the clients go away', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent, heartbeatMs: 60_000 });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      const streams = await Promise.all([1, 2, 3].map(() => openStream(`${server.baseUrl}/turns/${answer.turnId}/events`)));
      for (const stream of streams) await stream.until((messages) => lastSeq(messages) === 1);
      // The fast path: the instance's one reader of the turn feeds all three.
      await expect.poll(() => server.pendingWaits()).toBe(1);
      streams[0]?.close();
      streams[1]?.close();
      await control.delta('one left ');
      await streams[2]?.until((messages) => lastSeq(messages) === 2);
      expect(server.pendingWaits()).toBe(1);
      streams[2]?.close();
      await expect.poll(() => server.pendingWaits()).toBe(0);
      // The producer did not notice: the turn goes on and ends normally.
      await control.delta('still here');
      await control.end();
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      expect(turn.status).toBe('complete');
      expect(textOf((await replayAll(server.baseUrl, answer.turnId)).events)).toBe('one left still here');
    });

    it('ends the turn failed with an error object when the agent throws, keeping the partial text', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('partial ');
      await control.throw(new Error('model crashed: secret internals'));
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      expect(turn.status).toBe('failed');
      const { events } = await replayAll(server.baseUrl, answer.turnId);
      const end = events.at(-1);
      expect(end).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'agent_failed' } });
      expect(JSON.stringify(end)).not.toContain('secret');
      expect(textOf(events)).toBe('partial ');
      await expectSha(events);
      expect(server.errors.length).toBe(1);
    });

    it('ends the turn failed when the agent yields an invalid event or exceeds a cap', async () => {
      const badAgent = async function* () {
        yield { type: 'delta' as const, text: 'ok' };
        yield { type: 'action' as const, callId: '', name: 'x', status: 'started' as const };
      };
      const server = await setup({ agent: badAgent });
      const answer = await submitted(server);
      await waitForTurnEnd(server.log, answer.turnId);
      const { events } = await replayAll(server.baseUrl, answer.turnId);
      expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'invalid_agent_event' } });
      await expectSha(events);

      const capped = await setup({ agent: textAgent('x'.repeat(100), { chunk: 10 }), maxTextPerTurn: 35 });
      const cappedAnswer = await submitted(capped);
      await waitForTurnEnd(capped.log, cappedAnswer.turnId);
      const cappedEvents = (await replayAll(capped.baseUrl, cappedAnswer.turnId)).events;
      expect(cappedEvents.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'turn_too_large' } });
      expect(textOf(cappedEvents)).toBe('x'.repeat(30));
      await expectSha(cappedEvents);

      const counted = await setup({ agent: textAgent('y'.repeat(100), { chunk: 1 }), maxEventsPerTurn: 10 });
      const countedAnswer = await submitted(counted);
      await waitForTurnEnd(counted.log, countedAnswer.turnId);
      const countedEvents = (await replayAll(counted.baseUrl, countedAnswer.turnId)).events;
      expect(countedEvents.length).toBe(10);
      expect(countedEvents.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'turn_too_large' } });
    });
  });
}
