/** Section 1 of docs/protocol.md over real HTTP: submitting a message (idempotency, validation, conversations). Part of the protocol suite (protocol-suite.ts). */
import { describe, expect, it } from 'vitest';
import { listAnswerSchema, submitAnswerSchema } from '../../../src/protocol/schemas.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { newKey, replayAll, submitMessage, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { LONG_TEXT, expectError, post, expectSha, type ProtocolKit } from './protocol-kit.js';

export function defineSubmitTests(kit: ProtocolKit): void {
  const { setup, submitted } = kit;
  describe('1. submit', () => {
    it('answers 202 with a pending turn and produces it with no client connected', async () => {
      const server = await setup({ agent: textAgent(LONG_TEXT, { chunk: 7 }) });
      const response = await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'Hi' }), {
        'idempotency-key': newKey(),
      });
      expect(response.status).toBe(202);
      expect(response.headers.get('content-type')).toBe('application/json');
      const answer = submitAnswerSchema.parse(await response.json());
      expect(answer).toMatchObject({ conversationId: 'conv-1', status: 'pending' });
      expect(answer.turnId).toMatch(/^[A-Za-z0-9_-]{21}$/);
      const turn = await waitForTurnEnd(server.log, answer.turnId);
      expect(turn.status).toBe('complete');
      const { events } = await replayAll(server.baseUrl, answer.turnId);
      expect(textOf(events)).toBe(LONG_TEXT);
      await expectSha(events);
    });

    it('accepts JSON object content and hands it to the agent as sent', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const content = { text: 'Propose personas', attachments: [{ id: 'a1', size: 3 }], flags: { fast: true } };
      await submitted(server, 'conv-1', content);
      const control = await agent.nextTurn();
      expect(control.context.content).toEqual(content);
      expect(control.context.principal).toBe('anonymous');
      await control.end();
    });

    it('replays the first answer for the same key and body: 200, Idempotent-Replayed, same turn, no new turn', async () => {
      const server = await setup();
      const key = newKey();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const first = await post(url, JSON.stringify({ content: { a: 1, b: [1, 2] } }), { 'idempotency-key': key });
      expect(first.status).toBe(202);
      const firstBody = submitAnswerSchema.parse(await first.json());
      // Same body, other key order and whitespace: the same request.
      for (const body of [JSON.stringify({ content: { a: 1, b: [1, 2] } }), '{ "content" : { "b":[1,2], "a":1 } }']) {
        const again = await post(url, body, { 'idempotency-key': key });
        expect(again.status).toBe(200);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        expect(submitAnswerSchema.parse(await again.json())).toEqual(firstBody);
      }
      await waitForTurnEnd(server.log, firstBody.turnId);
      const list = listAnswerSchema.parse(await (await fetch(`${server.baseUrl}/conversations/conv-1/turns`)).json());
      expect(list.turns.map((turn) => turn.id)).toEqual([firstBody.turnId]);
    });

    it('answers 422 idempotency_key_reused for the same key with another body or conversation, creating nothing', async () => {
      const server = await setup();
      const key = newKey();
      const first = await submitMessage(server.baseUrl, 'conv-1', 'one', key);
      await expectError(await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'two' }), { 'idempotency-key': key }), 422, 'idempotency_key_reused');
      await expectError(await post(`${server.baseUrl}/conversations/conv-2/messages`, JSON.stringify({ content: 'one' }), { 'idempotency-key': key }), 422, 'idempotency_key_reused');
      expect((await server.log.listTurns('conv-1', 'anonymous', 10)).map((turn) => turn.id)).toEqual([first.turnId]);
      expect(await server.log.listTurns('conv-2', 'anonymous', 10)).toEqual([]);
    });

    it('answers 409 while the same key is still being processed, then 200 once it is done', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const server = await setup({
        wrap: (inner) => ({
          createTurn: async (turn) => {
            entered();
            await gate;
            return inner.createTurn(turn);
          },
        }),
      });
      const key = newKey();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const body = JSON.stringify({ content: 'slow' });
      const firstRequest = post(url, body, { 'idempotency-key': key });
      await inside;
      const duplicate = await post(url, body, { 'idempotency-key': key });
      await expectError(duplicate.clone(), 409, 'idempotency_key_in_flight');
      expect(duplicate.headers.get('retry-after')).toBe('1');
      // Another body under the in-flight key is still a reuse.
      await expectError(await post(url, JSON.stringify({ content: 'other' }), { 'idempotency-key': key }), 422, 'idempotency_key_reused');
      release();
      const first = await firstRequest;
      expect(first.status).toBe(202);
      const again = await post(url, body, { 'idempotency-key': key });
      expect(again.status).toBe(200);
      expect((await again.json()) as unknown).toEqual((await first.json()) as unknown);
    });

    it('frees the key when the turn cannot be created, so the retry creates it', async () => {
      let failures = 1;
      const server = await setup({
        wrap: (inner) => ({
          createTurn: async (turn) => {
            if (failures-- > 0) throw new Error('store down');
            return inner.createTurn(turn);
          },
        }),
      });
      const key = newKey();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const body = JSON.stringify({ content: 'x' });
      // docs/faults.md #51: a failing log is a 503 the outbox retries, never a 500.
      const refused = await post(url, body, { 'idempotency-key': key });
      expect(refused.headers.get('retry-after')).toBe('1');
      await expectError(refused, 503, 'unavailable');
      expect(server.errors.length).toBe(1);
      const retry = await post(url, body, { 'idempotency-key': key });
      expect(retry.status).toBe(202);
    });

    it('scopes keys to the principal', async () => {
      const server = await setup({
        authorize: (request) => {
          const user = request.headers.get('x-user');
          if (!user) throw new Error('no user');
          return user;
        },
      });
      const key = newKey();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const body = JSON.stringify({ content: 'same' });
      const alice = await post(url, body, { 'idempotency-key': key, 'x-user': 'alice' });
      const bob = await post(url, body, { 'idempotency-key': key, 'x-user': 'bob' });
      expect(alice.status).toBe(202);
      expect(bob.status).toBe(202);
      const a = submitAnswerSchema.parse(await alice.json());
      const b = submitAnswerSchema.parse(await bob.json());
      expect(a.turnId).not.toBe(b.turnId);
      await expectError(await post(url, body, { 'idempotency-key': key }), 401, 'unauthorized');
    });

    it('answers 400 invalid_idempotency_key for a missing or malformed key', async () => {
      const server = await setup();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const body = JSON.stringify({ content: 'x' });
      await expectError(await post(url, body), 400, 'invalid_idempotency_key');
      for (const key of ['a'.repeat(15), 'a'.repeat(129), 'has space in it 123', 'dots.are.not.allowed', 'ümlaut-key-1234567', '']) {
        await expectError(await post(url, body, { 'idempotency-key': key }), 400, 'invalid_idempotency_key');
      }
      expect((await post(url, body, { 'idempotency-key': 'a'.repeat(16) })).status).toBe(202);
      expect((await post(url, body, { 'idempotency-key': `${'b'.repeat(127)}_` })).status).toBe(202);
    });

    it('answers 400 for invalid JSON and wrong shapes, creating nothing', async () => {
      const server = await setup();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const invalidJson = ['', '{', '{"content": "x"', "{'content':'x'}", 'content=x', '{"content": "x"} trailing'];
      for (const body of invalidJson) await expectError(await post(url, body, { 'idempotency-key': newKey() }), 400, 'invalid_json');
      const badUtf8 = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
        body: new Uint8Array([0x7b, 0x22, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      });
      await expectError(badUtf8, 400, 'invalid_json');
      const wrongShapes = [
        '{}',
        'null',
        '[]',
        '"content"',
        '42',
        '{"content": 42}',
        '{"content": null}',
        '{"content": true}',
        '{"content": ["a"]}',
        '{"text": "x"}',
        '{"content": {"__proto__": {"polluted": true}}}',
        '{"content": {"nested": {"constructor": {"prototype": {}}}}}',
        `{"content": {"deep": ${'['.repeat(100)}${']'.repeat(100)}}}`,
      ];
      for (const body of wrongShapes) await expectError(await post(url, body, { 'idempotency-key': newKey() }), 400, 'invalid_body');
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
      expect(await server.log.listTurns('conv-1', 'anonymous', 200)).toEqual([]);
    });

    it('answers 400 for a body that is not declared JSON (the protocol lists no 415)', async () => {
      const server = await setup();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        await expectError(await post(url, JSON.stringify({ content: 'x' }), { 'idempotency-key': newKey(), 'content-type': type }), 400, 'unsupported_media_type');
      }
      expect((await post(url, JSON.stringify({ content: 'x' }), { 'idempotency-key': newKey(), 'content-type': 'application/json; charset=utf-8' })).status).toBe(202);
    });

    it('answers 413 above 64 KiB (declared or streamed) and accepts exactly 64 KiB', async () => {
      const server = await setup();
      const url = `${server.baseUrl}/conversations/conv-1/messages`;
      const overhead = JSON.stringify({ content: '' }).length;
      const exact = JSON.stringify({ content: 'x'.repeat(64 * 1024 - overhead) });
      expect(new TextEncoder().encode(exact).byteLength).toBe(64 * 1024);
      expect((await post(url, exact, { 'idempotency-key': newKey() })).status).toBe(202);
      const over = JSON.stringify({ content: 'x'.repeat(64 * 1024 - overhead + 1) });
      await expectError(await post(url, over, { 'idempotency-key': newKey() }), 413, 'payload_too_large');
      // Chunked, no Content-Length: the cap applies while reading.
      const bytes = new TextEncoder().encode(JSON.stringify({ content: 'y'.repeat(200 * 1024) }));
      const streamed = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
        body: new ReadableStream<Uint8Array>({
          start(controller) {
            for (let at = 0; at < bytes.length; at += 16 * 1024) controller.enqueue(bytes.slice(at, at + 16 * 1024));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit & { duplex: 'half' });
      await expectError(streamed, 413, 'payload_too_large');
      expect((await server.log.listTurns('conv-1', 'anonymous', 200)).length).toBe(1);
    });

    it('answers 400 invalid_id for a malformed conversation id', async () => {
      const server = await setup();
      for (const id of ['a'.repeat(129), 'has.dot', 'sp%20ace', '%C3%A9']) {
        await expectError(await post(`${server.baseUrl}/conversations/${id}/messages`, JSON.stringify({ content: 'x' }), { 'idempotency-key': newKey() }), 400, 'invalid_id');
      }
      expect((await post(`${server.baseUrl}/conversations/${'a'.repeat(128)}/messages`, JSON.stringify({ content: 'x' }), { 'idempotency-key': newKey() })).status).toBe(202);
    });

    it('answers 503 overloaded with Retry-After beyond maxLiveTurns, and still replays known keys', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent, maxLiveTurns: 1 });
      const key = newKey();
      const first = await submitMessage(server.baseUrl, 'conv-1', 'one', key);
      const busy = await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'two' }), { 'idempotency-key': newKey() });
      expect(busy.headers.get('retry-after')).toBe('1');
      await expectError(busy, 503, 'overloaded');
      const replayed = await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'one' }), { 'idempotency-key': key });
      expect(replayed.status).toBe(200);
      await (await agent.nextTurn()).end();
      await waitForTurnEnd(server.log, first.turnId);
      await expect.poll(async () => (await post(`${server.baseUrl}/conversations/conv-1/messages`, JSON.stringify({ content: 'three' }), { 'idempotency-key': newKey() })).status).toBe(202);
    });
  });
}
