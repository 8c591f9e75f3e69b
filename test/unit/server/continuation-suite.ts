/**
 * Protocol 1.2 on the submit route, for any TurnLog (docs/protocol.md §1 `context`, §9
 * continuations): what the agent is handed for one turn, what is stored, what the wire says,
 * and `uiMessageAgent` over the real `streamText` and the AI SDK's mock model, with a tool
 * that needs approval whose `execute` is counted on the server.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { UIMessage, UIMessageChunk } from 'ai';
import { MAX_CONTEXT_BYTES, errorBodySchema, listAnswerSchema, replayAnswerSchema, type JsonObject } from '../../../src/protocol/schemas.js';
import { createChunkReplayer } from '../../../src/protocol/ai-sdk/mapping.js';
import { buildUIMessage } from '../../../src/protocol/ai-sdk/ui-message.js';
import { uiMessageAgent, type UIMessageAgentContext } from '../../../src/server/ai-sdk/index.js';
import type { Agent, AgentContext } from '../../../src/server/producer/agent.js';
import { isExpiredTurn, type TurnLog } from '../../../src/server/log/turn-log.js';
import { newKey, replayAll, startTestServer, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';
import { pageTools, streamTools } from '../../../examples/chat/ai-tools-model.js';
import type { MakeProtocolLog } from './protocol-suite.js';

const question = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });

/** POST /conversations/{id}/messages with a body as given. */
function post(server: TestServer, conversationId: string, body: unknown, key = newKey(), headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.baseUrl}/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...headers },
    body: JSON.stringify(body),
  });
}

async function accepted(response: Response): Promise<{ status: number; turnId: string }> {
  if (response.status !== 202 && response.status !== 200) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
  const { turnId } = (await response.json()) as { turnId: string };
  return { status: response.status, turnId };
}

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(errorBodySchema.parse(await response.json()).error.code).toBe(code);
}

/** The assistant message a turn's log holds, as `useChat` would show it (`base` for a continuation). */
async function messageOf(server: TestServer, turnId: string, messageId = turnId, base?: UIMessage): Promise<UIMessage> {
  const chunks: UIMessageChunk[] = [];
  const replayer = createChunkReplayer(turnId, (chunk) => chunks.push(chunk), messageId);
  for (const event of (await replayAll(server.baseUrl, turnId)).events) {
    if (event.type === 'delta') replayer.delta(event);
    else if (event.type === 'part') replayer.part(event.part);
    else if (event.type === 'turn.end' && event.status !== 'complete') replayer.end(event);
  }
  return buildUIMessage(messageId, chunks, base);
}

/** The message with its approval request answered, as `addToolApprovalResponse` leaves it. */
function answerApproval(message: UIMessage, approved: boolean): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) => {
      const tool = part as { state?: string; approval?: { id: string } };
      return tool.state === 'approval-requested' ? ({ ...part, state: 'approval-responded', approval: { ...tool.approval, approved } } as never) : part;
    }),
  };
}

export function defineContinuationSuite(name: string, makeLog: MakeProtocolLog): void {
  describe(`protocol 1.2 submit: context and continuations (${name})`, () => {
    let log: TurnLog;
    let cleanup: () => Promise<void>;
    let server: (TestServer & { errors: unknown[] }) | undefined;
    beforeEach(async () => {
      ({ log, cleanup } = await makeLog({ now: Date.now, retentionMs: 24 * 60 * 60 * 1000 }));
    });
    afterEach(async () => {
      await server?.close();
      server = undefined;
      await cleanup();
    });

    /** A server whose agent records what it is handed and answers one delta. */
    async function recording(): Promise<AgentContext[]> {
      const seen: AgentContext[] = [];
      const agent: Agent = async function* (context) {
        seen.push(context);
        yield { type: 'delta', text: 'ok' };
      };
      server = await startTestServer({ agent, store: log });
      return seen;
    }

    it('hands context and headers to the agent for that turn only, stores context with the turn and never the headers', async () => {
      const seen = await recording();
      const context: JsonObject = { body: { model: 'fast' }, metadata: { tier: 'gold' } };
      const first = await accepted(await post(server!, 'conv-ctx', { content: 'hi', context }, newKey(), { 'x-app-locale': 'nb-NO', authorization: 'Bearer secret-token' }));
      await waitForTurnEnd(log, first.turnId);
      const second = await accepted(await post(server!, 'conv-ctx', { content: 'again' }));
      await waitForTurnEnd(log, second.turnId);

      expect(seen[0]!.context).toEqual(context);
      expect(seen[0]!.headers.get('x-app-locale')).toBe('nb-NO');
      expect(seen[0]!.headers.get('authorization')).toBe('Bearer secret-token');
      expect(seen[1]!.context).toBeUndefined();
      expect(seen[1]!.headers.get('x-app-locale')).toBeNull();
      expect(seen.map((one) => one.continues)).toEqual([undefined, undefined]);

      const stored = await log.getTurn(first.turnId);
      expect(stored && !isExpiredTurn(stored) && stored.context).toEqual(context);
      expect(JSON.stringify(stored)).not.toContain('secret-token');
      expect(JSON.stringify(stored)).not.toContain('nb-NO');
      // The wire's turn object carries the content, never the context.
      const replay = replayAnswerSchema.parse(await (await fetch(`${server!.baseUrl}/turns/${first.turnId}`)).json());
      expect(replay.turn).not.toHaveProperty('context');
      expect(replay.turn).not.toHaveProperty('continues');
    });

    it('counts context in the idempotency fingerprint', async () => {
      await recording();
      const key = newKey();
      const first = await accepted(await post(server!, 'conv-fp', { content: 'hi', context: { a: 1, b: [1, 2] } }, key));
      // The same body in another key order and spacing is the same request.
      const again = await accepted(await post(server!, 'conv-fp', { context: { b: [1, 2], a: 1 }, content: 'hi' }, key));
      expect(again).toEqual({ status: 200, turnId: first.turnId });
      await expectError(await post(server!, 'conv-fp', { content: 'hi', context: { a: 2, b: [1, 2] } }, key), 422, 'idempotency_key_reused');
      await expectError(await post(server!, 'conv-fp', { content: 'hi' }, key), 422, 'idempotency_key_reused');
    });

    it('refuses a context over 16 KiB (413 context_too_large) or not an object (400), and takes one at the limit', async () => {
      await recording();
      // {"pad":"…"} is 10 bytes around the padding.
      const atLimit = { pad: 'x'.repeat(MAX_CONTEXT_BYTES - 10) };
      expect((await post(server!, 'conv-big', { content: 'hi', context: atLimit })).status).toBe(202);
      await expectError(await post(server!, 'conv-big', { content: 'hi', context: { pad: 'x'.repeat(MAX_CONTEXT_BYTES - 9) } }), 413, 'context_too_large');
      // Counted in UTF-8 bytes: 4 bytes per emoji.
      await expectError(await post(server!, 'conv-big', { content: 'hi', context: { pad: '😀'.repeat(MAX_CONTEXT_BYTES / 4) } }), 413, 'context_too_large');
      for (const context of [[1], 'text', null, 5]) await expectError(await post(server!, 'conv-big', { content: 'hi', context }), 400, 'invalid_body');
    });

    it('starts a continuation turn for an assistant message: the agent and every turn object say what it continues', async () => {
      const seen = await recording();
      const user = await accepted(await post(server!, 'conv-cont', { content: question('u1', 'Transfer 5 to Bob') }));
      await waitForTurnEnd(log, user.turnId);
      const content = { id: user.turnId, role: 'assistant', parts: [{ type: 'text', text: 'ok' }] };
      const continuation = await accepted(await post(server!, 'conv-cont', { content }));
      await waitForTurnEnd(log, continuation.turnId);

      expect(seen[1]!.continues).toBe(user.turnId);
      expect(seen[1]!.content).toEqual(content);
      const replay = replayAnswerSchema.parse(await (await fetch(`${server!.baseUrl}/turns/${continuation.turnId}`)).json());
      expect(replay.turn.continues).toBe(user.turnId);
      const { turns } = listAnswerSchema.parse(await (await fetch(`${server!.baseUrl}/conversations/conv-cont/turns`)).json());
      expect(turns.map((turn) => [turn.id, turn.continues])).toEqual([
        [continuation.turnId, user.turnId],
        [user.turnId, undefined],
      ]);
      // An assistant message that names no message it continues is malformed.
      await expectError(await post(server!, 'conv-cont', { content: { role: 'assistant', parts: [] } }), 400, 'invalid_body');
      await expectError(await post(server!, 'conv-cont', { content: { id: 'bad id!', role: 'assistant', parts: [] } }), 400, 'invalid_body');
      await expectError(await post(server!, 'conv-cont', { content: { id: user.turnId, role: 'assistant', parts: [{ text: 'no type' }] } }), 400, 'invalid_body');
    });

    describe('uiMessageAgent', () => {
      /** Executions of the approval tool's `execute`, counted on the server. */
      let executions: number;
      let seen: UIMessageAgentContext[];
      beforeEach(async () => {
        executions = 0;
        seen = [];
        const tools = pageTools(() => executions++);
        // No `log` option: the agent reads the conversation from the handler it is mounted in.
        const agent = uiMessageAgent(async (context) => {
          seen.push(context);
          return streamTools(context.messages, tools, { signal: context.signal });
        });
        server = await startTestServer({ agent, store: log });
      });

      /** Submits and waits for the turn's end. */
      async function turn(conversationId: string, body: unknown, key = newKey()): Promise<string> {
        const { turnId } = await accepted(await post(server!, conversationId, body, key));
        await waitForTurnEnd(log, turnId);
        return turnId;
      }

      it('runs an approved tool once per approved call, whatever retries and tabs send the answer, and reads it back folded', async () => {
        const u1 = question('u1', 'Transfer 5 to Bob');
        const t1 = await turn('conv-ap', { content: u1 });
        const asked = await messageOf(server!, t1);
        expect(asked.parts.find((part) => part.type === 'tool-transfer')).toMatchObject({ state: 'approval-requested' });
        expect(executions).toBe(0);

        const answered = answerApproval(asked, true);
        const key = newKey();
        const t2 = await turn('conv-ap', { content: answered }, key);
        // A retry after a reload and a second tab answering the same call send the same key and body: one turn.
        const replays = await Promise.all([post(server!, 'conv-ap', { content: answered }, key), post(server!, 'conv-ap', { content: answered }, key)]);
        for (const replay of replays) expect(await accepted(replay)).toEqual({ status: 200, turnId: t2 });
        // A different answer to the same call under its key is refused.
        await expectError(await post(server!, 'conv-ap', { content: answerApproval(asked, false) }, key), 422, 'idempotency_key_reused');
        expect(executions).toBe(1);

        // The continuation saw the conversation with the answered message in place, user first.
        expect(seen[1]!.messages.map((message) => [message.role, message.id])).toEqual([
          ['user', 'u1'],
          ['assistant', t1],
        ]);
        expect(seen[1]!.message).toEqual(answered);
        const { events } = await replayAll(server!.baseUrl, t2);
        expect(events.find((event) => event.type === 'part' && event.part.type === 'start')).toMatchObject({ part: { messageId: t1 } });
        const final = await messageOf(server!, t2, t1, answered);
        expect(final.id).toBe(t1);
        expect(final.parts.find((part) => part.type === 'tool-transfer')).toMatchObject({ state: 'output-available', output: { sent: 5 } });
        expect(final.parts.at(-1)).toMatchObject({ type: 'text', text: 'Sent 5 to Bob, and the receipt is in your inbox.' });

        // The next turn sees that message folded (its answer and output), and runs nothing again.
        await turn('conv-ap', { content: question('u2', 'Thanks') });
        expect(executions).toBe(1);
        expect(seen[2]!.messages.map((message) => message.id)).toEqual(['u1', t1, 'u2']);
        expect(seen[2]!.messages[1]).toEqual(final);
      });

      it('never runs a denied tool', async () => {
        const t1 = await turn('conv-deny', { content: question('u1', 'Transfer 5 to Bob') });
        const denied = answerApproval(await messageOf(server!, t1), false);
        const t2 = await turn('conv-deny', { content: denied });
        expect(executions).toBe(0);
        const final = await messageOf(server!, t2, t1, denied);
        expect(final.parts.find((part) => part.type === 'tool-transfer')).toMatchObject({ state: 'output-denied' });
      });

      it('continues with a client tool\'s output: the model sees it and the answer extends the same message', async () => {
        const t1 = await turn('conv-client-tool', { content: question('u1', 'Where am I?') });
        const asked = await messageOf(server!, t1);
        expect(asked.parts.find((part) => part.type === 'tool-locate')).toMatchObject({ state: 'input-available' });
        // What addToolOutput leaves in the message.
        const answered: UIMessage = {
          ...asked,
          parts: asked.parts.map((part) => (part.type === 'tool-locate' ? ({ ...part, state: 'output-available', output: { city: 'Bergen' } } as never) : part)),
        };
        const t2 = await turn('conv-client-tool', { content: answered });
        expect(seen[1]!.continues).toBe(t1);
        const final = await messageOf(server!, t2, t1, answered);
        expect(final.parts.at(-1)).toMatchObject({ type: 'text', text: 'You are in Bergen, so the weather there is what counts today.' });
        expect(final.parts.filter((part) => part.type === 'tool-locate')).toHaveLength(1);
      });

      it('hands the produce function context and headers for that turn only', async () => {
        const context = { body: { model: 'small' }, metadata: { source: 'test' } };
        await turn('conv-req', { content: question('u1', 'Hi'), context });
        await turn('conv-req', { content: question('u2', 'Hi again') });
        expect(seen[0]!.context).toEqual(context);
        expect(seen[1]!.context).toBeUndefined();
      });

      it('regenerates: the same user message under a new key is a new turn that sees no earlier answer to it', async () => {
        const u1 = question('u1', 'Hi');
        const t1 = await turn('conv-regen', { content: u1 });
        const t2 = await turn('conv-regen', { content: u1 });
        expect(t2).not.toBe(t1);
        expect(seen[1]!.messages).toEqual([u1]);
        // A later turn sees the regenerated answer only.
        await turn('conv-regen', { content: question('u2', 'Thanks') });
        expect(seen[2]!.messages.map((message) => message.id)).toEqual(['u1', t2, 'u2']);
      });
    });
  });
}
