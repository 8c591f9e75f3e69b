/** Section 6 of docs/protocol.md (retention) and the routes and methods every server answers, over real HTTP. Part of the protocol suite (protocol-suite.ts). */
import { describe, expect, it } from 'vitest';
import { listAnswerSchema, replayAnswerSchema, submitAnswerSchema } from '../../../src/protocol/schemas.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { newKey, replayAll, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { expectError, post, seqs, type ProtocolKit } from './protocol-kit.js';

export function defineRoutesTests(kit: ProtocolKit): void {
  const { setup, submitted, finishedTurn, suiteOptions } = kit;
  describe.runIf(suiteOptions.retention ?? true)('6. retention', () => {
    it('keeps an ended turn and its key for the retention period, then answers 410', async () => {
      let clock = Date.parse('2030-01-01T00:00:00.000Z');
      const retentionMs = 60 * 60 * 1000;
      const server = await setup({ clock: () => clock, retentionMs });
      const key = newKey();
      const answer = await submitMessage(server.baseUrl, 'conv-r', 'keep me', key);
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      expect(turn.createdAt).toBe('2030-01-01T00:00:00.000Z');
      clock += retentionMs - 1;
      expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(200);
      expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}/events`)).status).toBe(200);
      const replayed = await post(`${server.baseUrl}/conversations/conv-r/messages`, JSON.stringify({ content: 'keep me' }), { 'idempotency-key': key });
      expect(replayed.status).toBe(200);
      expect(submitAnswerSchema.parse(await replayed.json()).turnId).toBe(answer.turnId);
      clock += 2;
      await expectError(await fetch(`${server.baseUrl}/turns/${answer.turnId}`), 410, 'turn_expired');
      await expectError(await fetch(`${server.baseUrl}/turns/${answer.turnId}/events`), 410, 'turn_expired');
      await expectError(await fetch(`${server.baseUrl}/turns/${answer.turnId}/events`, { headers: { 'last-event-id': '1' } }), 410, 'turn_expired');
      await expectError(await post(`${server.baseUrl}/turns/${answer.turnId}/cancel`, undefined), 410, 'turn_expired');
      expect(listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-r/turns`)).json()).turns).toEqual([]);
    });

    it('never expires a live turn', async () => {
      let clock = Date.parse('2030-01-01T00:00:00.000Z');
      const agent = controlledAgent();
      const server = await setup({ clock: () => clock, retentionMs: 1000, agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('slow');
      clock += 10_000;
      const replay = replayAnswerSchema.parse(await (await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).json());
      expect(replay.turn.status).toBe('streaming');
      await control.end();
      await waitForTurnEnd(server.log, answer.turnId);
      expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(200);
      clock += 1000;
      expect((await fetch(`${server.baseUrl}/turns/${answer.turnId}`)).status).toBe(410);
    });
  });

  // ------------------------------------------------------------------ routing

  describe('routes and methods', () => {
    it('answers 404 not_found for unknown routes and paths outside the base', async () => {
      const server = await setup();
      const paths = ['/api', '/api/', '/api/nope', '/api/turns', '/api/turns/', '/api/turns/abc/events/more', '/api/conversations/c1', '/api/conversations/c1/other', '/other/turns/abc', '/', '/apix/turns/abc'];
      for (const path of paths) await expectError(await fetch(`${server.origin}${path}`), 404, 'not_found');
    });

    it('answers 405 method_not_allowed with Allow for wrong methods', async () => {
      const server = await setup();
      const { answer } = await finishedTurn(server);
      const cases: [string, string, string][] = [
        ['GET', '/conversations/c1/messages', 'POST'],
        ['PUT', '/conversations/c1/messages', 'POST'],
        ['POST', '/conversations/c1/turns', 'GET, HEAD'],
        ['POST', `/turns/${answer.turnId}/events`, 'GET, HEAD'],
        ['DELETE', `/turns/${answer.turnId}`, 'GET, HEAD'],
        ['PATCH', `/turns/${answer.turnId}`, 'GET, HEAD'],
        ['GET', `/turns/${answer.turnId}/cancel`, 'POST'],
      ];
      for (const [method, path, allow] of cases) {
        const response = await fetch(`${server.baseUrl}${path}`, { method });
        expect(response.headers.get('allow')).toBe(allow);
        await expectError(response, 405, 'method_not_allowed');
      }
      // None of that touched the turn.
      expect((await replayAll(server.baseUrl, answer.turnId)).turn.status).toBe('complete');
    });

    it('keeps every log intact under a burst of bad requests', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const answer = await submitted(server);
      const control = await agent.nextTurn();
      await control.delta('intact');
      const base = `${server.baseUrl}`;
      const bad: Promise<Response>[] = [
        post(`${base}/conversations/conv-1/messages`, '{', { 'idempotency-key': newKey() }),
        post(`${base}/conversations/conv-1/messages`, '{"content":1}', { 'idempotency-key': newKey() }),
        fetch(`${base}/turns/${answer.turnId}/events?after=-1`),
        fetch(`${base}/turns/${answer.turnId}?limit=0`),
        fetch(`${base}/turns/${answer.turnId}/events`, { headers: { 'last-event-id': '99' } }),
        fetch(`${base}/turns/${answer.turnId}`, { method: 'DELETE' }),
      ];
      for (const response of await Promise.all(bad)) expect(response.status).toBeGreaterThanOrEqual(400);
      await control.end();
      await waitForTurnEnd(server.log, answer.turnId);
      const { events } = await replayAll(server.baseUrl, answer.turnId);
      expect(seqs(events)).toEqual([1, 2, 3]);
      expect(textOf(events)).toBe('intact');
      expect((await server.log.listTurns('conv-1', 'anonymous', 10)).length).toBe(1);
      expect(server.errors).toEqual([]);
    });
  });
}
