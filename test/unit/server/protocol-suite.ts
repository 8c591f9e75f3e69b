/**
 * The reference server's protocol suite, docs/protocol.md sections 1–6 over real HTTP,
 * reusable for any TurnLog: `defineProtocolSuite('memory', makeLog)`. Everything the
 * server sends is validated with the shared zod schemas.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  cancelAnswerSchema,
  errorBodySchema,
  listAnswerSchema,
  replayAnswerSchema,
  submitAnswerSchema,
  turnEventSchema,
  type ServerErrorCode,
  type SubmitAnswer,
  type TurnEvent,
  type TurnObject,
} from '../../../src/protocol/schemas.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent, personasAgent, textAgent, PERSONAS } from '../../fixtures/agents.js';
import {
  newKey,
  replayAll,
  startTestServer,
  submitMessage,
  textOf,
  waitForTurnEnd,
  type TestServer,
  type TestServerOptions,
} from '../../fixtures/server.js';
import { lastSeq, openStream } from './sse-reader.js';

/** What a log under test is built with; a log that keeps its own clock may ignore `now`. */
export interface ProtocolLogContext {
  now: () => number;
  retentionMs: number;
}

export type MakeProtocolLog = (context: ProtocolLogContext) => Promise<{ log: TurnLog; cleanup(): Promise<void> }>;

export interface ProtocolSuiteOptions {
  /** Run the retention tests, which need a log that honours `context.now`. Default true. */
  retention?: boolean;
}

const TURN_LOG_METHODS = [
  'createTurn',
  'getTurn',
  'append',
  'read',
  'waitForEvents',
  'listTurns',
  'getIdempotency',
  'putIdempotencyIfAbsent',
  'completeIdempotency',
  'deleteIdempotency',
  'requestCancel',
  'isCancelRequested',
  'close',
] as const satisfies readonly (keyof TurnLog)[];

/** A log that delegates to `log`, with some methods replaced. */
function wrapLog(log: TurnLog, overrides: Partial<TurnLog>): TurnLog {
  const wrapped = {} as Record<string, unknown>;
  for (const name of TURN_LOG_METHODS) wrapped[name] = overrides[name] ?? (log[name] as (...args: never[]) => unknown).bind(log);
  return wrapped as unknown as TurnLog;
}

const LONG_TEXT = 'Lifeline keeps every token: 日本語のテキスト, emoji 😀👍🏽, accents éàü, and plain ASCII. '.repeat(6);

interface Setup extends TestServer {
  errors: unknown[];
  /** `waitForEvents` calls not yet settled (the follow loop's waiters). */
  pendingWaits(): number;
}

async function expectError(response: Response, status: number, code: ServerErrorCode): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = errorBodySchema.parse(await response.json());
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

function post(url: string, body: string | undefined, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body }),
  });
}

async function expectSha(events: readonly TurnEvent[]): Promise<void> {
  const end = events.at(-1);
  if (end?.type !== 'turn.end') throw new Error('last event is not turn.end');
  const text = textOf(events);
  expect(end.textLength).toBe(text.length);
  expect(end.textSha256).toBe(await sha256Hex(text));
}

function seqs(events: readonly TurnEvent[]): number[] {
  return events.map((event) => event.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

export function defineProtocolSuite(name: string, makeLog: MakeProtocolLog, suiteOptions: ProtocolSuiteOptions = {}): void {
  describe(`protocol (${name})`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function setup(
      options: TestServerOptions & { wrap?: (inner: TurnLog) => Partial<TurnLog>; clock?: () => number } = {},
    ): Promise<Setup> {
      const now = options.clock ?? Date.now;
      const made = await makeLog({ now, retentionMs: options.retentionMs ?? 24 * 60 * 60 * 1000 });
      cleanups.push(() => made.cleanup());
      let pending = 0;
      const base = made.log;
      const log = wrapLog(base, {
        ...options.wrap?.(base),
        waitForEvents: async (turnId, after, waitOptions) => {
          pending++;
          try {
            await base.waitForEvents(turnId, after, waitOptions);
          } finally {
            pending--;
          }
        },
      });
      const { wrap: _wrap, clock: _clock, ...serverOptions } = options;
      const server = await startTestServer({ ...serverOptions, store: log, now });
      cleanups.push(() => server.close());
      return { ...server, pendingWaits: () => pending };
    }

    async function submitted(server: Setup, conversationId = 'conv-1', content: string | Record<string, unknown> = 'Hello'): Promise<SubmitAnswer> {
      return submitMessage(server.baseUrl, conversationId, content);
    }

    async function finishedTurn(server: Setup): Promise<{ answer: SubmitAnswer; events: TurnEvent[]; turn: TurnObject }> {
      const answer = await submitted(server);
      await waitForTurnEnd(server.log, answer.turnId);
      const { events, turn } = await replayAll(server.baseUrl, answer.turnId);
      return { answer, events, turn };
    }

    // ------------------------------------------------------------------ section 1

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

    // ------------------------------------------------------------------ section 2

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

    // ------------------------------------------------------------------ section 3

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

    // ------------------------------------------------------------------ section 6

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
  });
}
