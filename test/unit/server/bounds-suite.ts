/**
 * PROTOCOL 1.1's bounds over real HTTP, shared by the memory and Redis turn logs: a
 * stream is written at its reader's pace with a bounded amount unsent per connection
 * (§8), replay pages are bounded by size (§3), every stream announces its heartbeat
 * (§2), and another principal's turn is 404 in every state (§8).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { errorBodySchema, replayAnswerSchema, turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { startTestServer, submitMessage, textOf, waitForTurnEnd, type TestServer, type TestServerOptions } from '../../fixtures/server.js';
import type { MakeProtocolLog } from './protocol-suite.js';
import { CHUNKED_END, getRequest, openRaw, parseResponse } from './raw-http.js';

/** PROTOCOL §8's bound on unsent data per connection (the reference server: about 1 MiB). */
const MAX_UNSENT_BYTES = 1024 * 1024;
/** PROTOCOL §3's page size (about 4 MiB of event data) plus one event that may overflow it. */
const MAX_PAGE_BYTES = 4 * 1024 * 1024 + 300 * 1024;

/** `count` deltas of `size` characters, each filled with its own letter (and an accent, so UTF-8 grows). */
function bigTextAgent(count: number, size: number): Agent {
  return async function* () {
    for (let i = 0; i < count; i++) yield { type: 'delta', text: `${String.fromCharCode(97 + (i % 26)).repeat(size - 1)}é` };
  };
}

/** `count` completed actions whose outputs are `size`-character strings, a short delta after each. */
function bigActionsAgent(count: number, size: number): Agent {
  return async function* () {
    for (let i = 0; i < count; i++) {
      yield { type: 'action', callId: `call_${i}`, name: 'fetch_page', status: 'completed', output: String(i % 10).repeat(size) };
      yield { type: 'delta', text: `page ${i} read. ` };
    }
  };
}

async function expectIntact(events: readonly TurnEvent[]): Promise<void> {
  expect(events.map((event) => event.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
  const end = events.at(-1);
  if (end?.type !== 'turn.end') throw new Error('the last event is not turn.end');
  const text = textOf(events);
  expect(end.textLength).toBe(text.length);
  expect(end.textSha256).toBe(await sha256Hex(text));
}

function sseEvents(body: string): { events: TurnEvent[]; messages: EventSourceMessage[] } {
  const messages: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => messages.push(message) });
  parser.feed(body);
  const events = messages.filter((message) => message.id !== undefined).map((message) => turnEventSchema.parse(JSON.parse(message.data)));
  return { events, messages };
}

async function expectNotFound(response: Response): Promise<void> {
  expect(response.status).toBe(404);
  expect(errorBodySchema.parse(await response.json()).error.code).toBe('turn_not_found');
}

export function defineBoundsSuite(name: string, makeLog: MakeProtocolLog, suiteOptions: { retention?: boolean } = {}): void {
  describe(`protocol 1.1 bounds (${name})`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function setup(options: TestServerOptions & { clock?: () => number } = {}): Promise<TestServer> {
      const now = options.clock ?? Date.now;
      const made = await makeLog({ now, retentionMs: options.retentionMs ?? 24 * 60 * 60 * 1000 });
      cleanups.push(() => made.cleanup());
      const { clock: _clock, ...serverOptions } = options;
      const server = await startTestServer({ ...serverOptions, store: made.log, now });
      cleanups.push(() => server.close());
      return server;
    }

    it('holds at most 1 MiB unsent per paused reader of an 8 MB turn, then delivers it whole', async () => {
      const server = await setup({ agent: bigTextAgent(2000, 4000) });
      const { turnId } = await submitMessage(server.baseUrl, 'conv-big', 'big');
      await waitForTurnEnd(server.log, turnId);
      const readers = await Promise.all([1, 2, 3].map(() => openRaw(server.origin, getRequest(`/api/turns/${turnId}/events`))));
      // Every connection's server side waits for its reader: it wrote what the kernel took and stopped.
      await expect
        .poll(() => {
          const unsent = server.sockets.unsent();
          return unsent.length === 3 && unsent.every((connection) => connection.waitingForDrain && !connection.finished);
        })
        .toBe(true);
      for (const connection of server.sockets.unsent()) expect(connection.bytes).toBeLessThanOrEqual(MAX_UNSENT_BYTES);
      // A reader that comes back gets every event, byte for byte.
      const [first] = readers;
      if (!first) throw new Error('no reader');
      const raw = await first.readUntil((tail) => tail.endsWith(CHUNKED_END));
      const response = parseResponse(raw);
      expect(response?.status).toBe(200);
      const { events } = sseEvents(response?.body.toString('utf8') ?? '');
      expect(events.length).toBe(2002);
      await expectIntact(events);
      for (const reader of readers) reader.socket.destroy();
    });

    it('pages a replay of huge events by size, at least one event per page, to the end', async () => {
      const server = await setup({ agent: bigActionsAgent(24, 250_000) });
      const { turnId } = await submitMessage(server.baseUrl, 'conv-huge', 'huge');
      await waitForTurnEnd(server.log, turnId);
      const events: TurnEvent[] = [];
      const pageSizes: number[] = [];
      for (let after = 0, more = true; more; ) {
        const response = await fetch(`${server.baseUrl}/turns/${turnId}?after=${after}&limit=10000`);
        expect(response.status).toBe(200);
        const text = await response.text();
        expect(text.length).toBeLessThanOrEqual(MAX_PAGE_BYTES);
        const page = replayAnswerSchema.parse(JSON.parse(text));
        expect(page.events.length).toBeGreaterThan(0);
        events.push(...page.events.map((event) => turnEventSchema.parse(event)));
        pageSizes.push(page.events.length);
        after = events.at(-1)?.seq ?? after;
        more = page.hasMore;
      }
      // Cut by size, not by limit: several pages, each announcing the next.
      expect(pageSizes.length).toBeGreaterThan(1);
      expect(events.length).toBe(24 * 2 + 2);
      await expectIntact(events);
      // The log itself: a page always holds one event, even one larger than the byte bound.
      expect(await server.log.read(turnId, 1, 10, 1)).toMatchObject({ events: [{ seq: 2, type: 'action' }], hasMore: true });
      expect((await server.log.read(turnId, 49, 10, 1)).hasMore).toBe(false);
    });

    it('announces its heartbeat in Lifeline-Heartbeat on every 200 stream: 1000 ms by default', async () => {
      const agent = controlledAgent();
      const server = await setup({ agent: agent.agent });
      const { turnId } = await submitMessage(server.baseUrl, 'conv-hb', 'beat');
      const control = await agent.nextTurn();
      await control.delta('a');
      for (const headers of [{}, { 'last-event-id': '1' }]) {
        const response = await fetch(`${server.baseUrl}/turns/${turnId}/events`, { headers });
        expect(response.status).toBe(200);
        expect(response.headers.get('lifeline-heartbeat')).toBe('1000');
        await response.body?.cancel();
      }
      await control.end();
      await waitForTurnEnd(server.log, turnId);
      const ended = await fetch(`${server.baseUrl}/turns/${turnId}/events`);
      expect(ended.headers.get('lifeline-heartbeat')).toBe('1000');
      await ended.body?.cancel();

      const tuned = await setup({ heartbeatMs: 250 });
      const answer = await submitMessage(tuned.baseUrl, 'conv-hb', 'beat');
      const response = await fetch(`${tuned.baseUrl}/turns/${answer.turnId}/events`);
      expect(response.headers.get('lifeline-heartbeat')).toBe('250');
      await response.body?.cancel();
    });

    describe.runIf(suiteOptions.retention ?? true)('principals and retention', () => {
      it("answers 404 for another principal's expired turn on every route, 410 to its owner", async () => {
        let clock = Date.parse('2030-01-01T00:00:00.000Z');
        const retentionMs = 60 * 60 * 1000;
        const server = await setup({ clock: () => clock, retentionMs, authorize: (request) => request.headers.get('x-user') ?? 'nobody' });
        const created = await fetch(`${server.baseUrl}/conversations/conv-p/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'principal-key-000001', 'x-user': 'alice' },
          body: JSON.stringify({ content: 'mine' }),
        });
        const { turnId } = (await created.json()) as { turnId: string };
        await waitForTurnEnd(server.log, turnId);
        clock += retentionMs + 1;
        const routes = (user: string): Promise<Response>[] => [
          fetch(`${server.baseUrl}/turns/${turnId}`, { headers: { 'x-user': user } }),
          fetch(`${server.baseUrl}/turns/${turnId}/events`, { headers: { 'x-user': user } }),
          fetch(`${server.baseUrl}/turns/${turnId}/events`, { headers: { 'x-user': user, 'last-event-id': '1' } }),
          fetch(`${server.baseUrl}/turns/${turnId}/cancel`, { method: 'POST', headers: { 'x-user': user } }),
        ];
        for (const response of await Promise.all(routes('bob'))) await expectNotFound(response);
        for (const response of await Promise.all(routes('alice'))) expect(response.status).toBe(410);
      });
    });
  });
}
