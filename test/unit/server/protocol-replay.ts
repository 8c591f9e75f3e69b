/** Sections 3 to 5 of docs/protocol.md over real HTTP: replay, list and cancel. Part of the protocol suite (protocol-suite.ts). */
import { describe, expect, it } from 'vitest';
import { cancelAnswerSchema, listAnswerSchema, replayAnswerSchema, turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { controlledAgent, personasAgent, textAgent } from '../../fixtures/agents.js';
import { replayAll, submitMessage, waitForTurnEnd } from '../../fixtures/server.js';
import { lastSeq, openStream } from './sse-reader.js';
import { expectError, post, expectSha, type ProtocolKit } from './protocol-kit.js';

export function defineReplayTests(kit: ProtocolKit): void {
  const { setup, submitted, finishedTurn } = kit;
  describe('3. replay', () => {
    it('returns the turn and its events as JSON, the same objects as the stream', async () => {
      const server = await setup({ agent: personasAgent() });
      const answer = await submitted(server);
      const stream = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`);
      await stream.ended;
      const response = await fetch(`${server.baseUrl}/turns/${answer.turnId}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      const replay = replayAnswerSchema.parse(await response.json());
      const events = replay.events.map((event) => turnEventSchema.parse(event));
      expect(events).toEqual(stream.events());
      expect(replay.hasMore).toBe(false);
      expect(replay.turn).toMatchObject({
        id: answer.turnId,
        conversationId: 'conv-1',
        messageId: answer.messageId,
        status: 'complete',
        lastSeq: events.length,
        content: 'Hello',
      });
      expect(Object.keys(replay.turn).sort()).toEqual(['content', 'conversationId', 'createdAt', 'delivery', 'id', 'lastSeq', 'messageId', 'status', 'updatedAt']);
    });

    it('pages with limit and hasMore until the end', async () => {
      const server = await setup({ agent: textAgent('abcdefghijklmnopqrstuvwxyz', { chunk: 2 }) });
      const { answer, events } = await finishedTurn(server);
      expect(events.length).toBe(15);
      const paged: TurnEvent[] = [];
      let after = 0;
      const flags: boolean[] = [];
      for (;;) {
        const page = replayAnswerSchema.parse(await (await fetch(`${server.baseUrl}/turns/${answer.turnId}?after=${after}&limit=4`)).json());
        const pageEvents = page.events.map((event) => turnEventSchema.parse(event));
        paged.push(...pageEvents);
        flags.push(page.hasMore);
        if (!page.hasMore) break;
        after = pageEvents.at(-1)?.seq ?? after;
      }
      expect(flags).toEqual([true, true, true, false]);
      expect(paged).toEqual(events);
      const exact = replayAnswerSchema.parse(await (await fetch(`${server.baseUrl}/turns/${answer.turnId}?after=11&limit=4`)).json());
      expect(exact.hasMore).toBe(false);
      expect(exact.events.length).toBe(4);
      const empty = replayAnswerSchema.parse(await (await fetch(`${server.baseUrl}/turns/${answer.turnId}?after=15`)).json());
      expect(empty).toMatchObject({ events: [], hasMore: false });
    });

    it('replays a live turn: status streaming, only what is logged', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('so far');
      const replay = replayAnswerSchema.parse(await (await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).json());
      expect(replay.turn).toMatchObject({ status: 'streaming', lastSeq: 2 });
      expect(replay.events.map((event) => turnEventSchema.parse(event).seq)).toEqual([1, 2]);
      await control.end();
    });

    it('answers 400 invalid_limit, invalid_resume_point, resume_point_ahead and 404 as documented', async () => {
      const server = await setup();
      const { answer, turn } = await finishedTurn(server);
      const url = `${server.baseUrl}/turns/${answer.turnId}`;
      for (const limit of ['0', '10001', '-1', '1.5', 'abc', '', '1e3', '100000000']) {
        await expectError(await fetch(`${url}?limit=${limit}`), 400, 'invalid_limit');
      }
      expect((await fetch(`${url}?limit=10000`)).status).toBe(200);
      expect((await fetch(`${url}?limit=1`)).status).toBe(200);
      for (const after of ['1e3', '-1', '0x10', '']) await expectError(await fetch(`${url}?after=${after}`), 400, 'invalid_resume_point');
      await expectError(await fetch(`${url}?after=${turn.lastSeq + 1}`), 400, 'resume_point_ahead');
      await expectError(await fetch(`${server.baseUrl}/turns/unknown-turn-id-0000000`), 404, 'turn_not_found');
      await expectError(await fetch(`${server.baseUrl}/turns/${'x'.repeat(129)}`), 400, 'invalid_id');
    });
  });

  // ------------------------------------------------------------------ section 4

  describe('4. list', () => {
    it('lists a conversation newest first with limit; an unused conversation lists empty', async () => {
      const server = await setup();
      const ids: string[] = [];
      // Content comes back exactly as accepted (1.1), objects included.
      const contents = ['message 0', { role: 'user', parts: [{ type: 'text', text: 'message 1' }] }, 'message 2', { n: 3, nested: { ok: true } }];
      for (const content of contents) {
        const answer = await submitMessage(server.baseUrl, 'conv-list', content);
        ids.push(answer.turnId);
        await waitForTurnEnd(server.log, answer.turnId);
      }
      await submitMessage(server.baseUrl, 'conv-other', 'elsewhere');
      const all = listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-list/turns`)).json());
      expect(all.turns.map((turn) => turn.id)).toEqual([...ids].reverse());
      expect(all.turns.map((turn) => turn.content)).toEqual([...contents].reverse());
      for (const turn of all.turns) expect(turn).toMatchObject({ conversationId: 'conv-list', status: 'complete' });
      const two = listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-list/turns?limit=2`)).json());
      expect(two.turns.map((turn) => turn.id)).toEqual([ids[3], ids[2]]);
      const unused = await fetch(`${server.baseUrl}/conversations/never-used/turns`);
      expect(unused.status).toBe(200);
      expect(await unused.json()).toEqual({ turns: [] });
    });

    it('answers 400 invalid_limit and invalid_id', async () => {
      const server = await setup();
      for (const limit of ['0', '201', 'x', '', '2.0']) {
        await expectError(await fetch(`${server.baseUrl}/conversations/conv-1/turns?limit=${limit}`), 400, 'invalid_limit');
      }
      expect((await fetch(`${server.baseUrl}/conversations/conv-1/turns?limit=200`)).status).toBe(200);
      await expectError(await fetch(`${server.baseUrl}/conversations/bad!id/turns`), 400, 'invalid_id');
    });

    it('limits the default page to 50', async () => {
      const server = await setup({ agent: textAgent('') });
      for (let i = 0; i < 51; i++) await submitMessage(server.baseUrl, 'conv-many', `m${i}`);
      const page = listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-many/turns`)).json());
      expect(page.turns.length).toBe(50);
    });
  });

  // ------------------------------------------------------------------ section 5

  describe('5. cancel', () => {
    it('answers 202, stops the producer and ends the log with turn.end cancelled', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('before cancel');
      const stream = await openStream(`${server.baseUrl}/turns/${answer.turnId}/events`);
      await stream.until((messages) => lastSeq(messages) === 2);
      const response = await post(`${server.baseUrl}/turns/${answer.turnId}/cancel`, undefined);
      expect(response.status).toBe(202);
      const body = cancelAnswerSchema.parse(await response.json());
      expect(body.turn.id).toBe(answer.turnId);
      expect(control.context.signal.aborted).toBe(true);
      await stream.ended;
      const events = stream.events();
      expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'cancelled', seq: 3 });
      expect(events.at(-1)).not.toHaveProperty('error');
      await expectSha(events);
      // The agent is not read any more: a late delta goes nowhere.
      await control.delta('after cancel');
      const replay = await replayAll(server.baseUrl, answer.turnId);
      expect(replay.turn.status).toBe('cancelled');
      expect(replay.events).toEqual(events);
    });

    it('answers 200 for an ended turn and changes nothing; 404 for an unknown one', async () => {
      const server = await setup();
      const { answer, events, turn } = await finishedTurn(server);
      const response = await post(`${server.baseUrl}/turns/${answer.turnId}/cancel`, undefined);
      expect(response.status).toBe(200);
      expect(cancelAnswerSchema.parse(await response.json()).turn).toEqual(turn);
      const after = await replayAll(server.baseUrl, answer.turnId);
      expect(after.events).toEqual(events);
      expect(after.turn).toEqual(turn);
      await expectError(await post(`${server.baseUrl}/turns/unknown-turn-id-0000000/cancel`, undefined), 404, 'turn_not_found');
    });

    it('cancels a turn whose agent is stuck waiting', async () => {
      const stuck = async function* (): AsyncGenerator<never> {
        await new Promise(() => undefined);
      };
      const server = await setup({ agent: stuck });
      const answer = await submitted(server);
      await expect.poll(async () => (await server.log.getTurn(answer.turnId)) !== undefined && (await server.log.read(answer.turnId, 0, 10)).events.length).toBe(1);
      expect((await post(`${server.baseUrl}/turns/${answer.turnId}/cancel`, undefined)).status).toBe(202);
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      expect(turn.status).toBe('cancelled');
    });
  });
}
