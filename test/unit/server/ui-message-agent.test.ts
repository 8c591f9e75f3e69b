/** `uiMessageAgent` with the real `streamText` over the AI SDK's test model: the log is the message, every exit ends the turn. */
import type { UIMessage, UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { streamAnswer } from '../../../examples/chat/ai-model.js';
import { createChunkReplayer } from '../../../src/protocol/ai-sdk/mapping.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { uiMessageAgent, type UIMessageAgentContext, type UIMessageProducer } from '../../../src/server/ai-sdk/index.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { referenceMessage } from '../ai-sdk/chunks.js';
import { replayAll, startTestServer, submitMessage, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';

let server: (TestServer & { errors: unknown[] }) | undefined;
afterEach(() => server?.close());

const question = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });

async function start(produce: UIMessageProducer) {
  const log = createMemoryTurnLog();
  server = await startTestServer({ agent: uiMessageAgent(produce, { log }), store: log });
  return server;
}

async function send(content: UIMessage | string, conversationId = 'conv-ai') {
  const answer = await submitMessage(server!.baseUrl, conversationId, content as never);
  await waitForTurnEnd(server!.log, answer.turnId);
  return { turnId: answer.turnId, ...(await replayAll(server!.baseUrl, answer.turnId)) };
}

function chunksOf(turnId: string, events: readonly TurnEvent[]): UIMessageChunk[] {
  const chunks: UIMessageChunk[] = [];
  const replayer = createChunkReplayer(turnId, (chunk) => chunks.push(chunk));
  for (const event of events) {
    if (event.type === 'delta') replayer.delta(event);
    else if (event.type === 'part') replayer.part(event.part);
    else if (event.type === 'turn.end') replayer.end(event);
  }
  return chunks;
}

describe('uiMessageAgent', () => {
  it('logs the streamText message so that it reads back equal to the AI SDK’s own, and hands the history to the next turn', async () => {
    const seen: UIMessageAgentContext[] = [];
    await start(async (context) => {
      seen.push(context);
      return streamAnswer(context.messages, { delayMs: 0, words: 12 });
    });
    const first = question('u1', 'What is the weather in Bergen?');
    const { turnId, events } = await send(first);
    expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'complete' });
    expect(events.filter((event) => event.type === 'delta').length).toBe(12);
    expect(events[1]).toMatchObject({ type: 'part', part: { type: 'start', messageId: turnId } });
    const reference = await referenceMessage((await collect(await streamAnswer([first], { delayMs: 0, words: 12 }))).map((chunk) => (chunk.type === 'start' ? { ...chunk, messageId: turnId } : chunk)));
    const logged = await referenceMessage(chunksOf(turnId, events) as never);
    expect(logged).toEqual(reference);
    expect(logged!.parts.map((part) => part.type)).toEqual(['step-start', 'reasoning', 'tool-weather', 'step-start', 'text']);

    // The second turn sees the first: its message, and its answer rebuilt from the log.
    const second = question('u2', 'And in Tromsø?');
    await send(second);
    expect(seen[0]!.messages).toEqual([first]);
    expect(seen[1]!.message).toEqual(second);
    expect(seen[1]!.messages.map((message) => message.id)).toEqual(['u1', turnId, 'u2']);
    expect(seen[1]!.messages[1]).toEqual(logged);
  });

  it('counts a text-delta with providerMetadata in the text and its proof, and rebuilds it in order (W3)', async () => {
    await start(() =>
      (async function* () {
        yield { type: 'start' } as UIMessageChunk;
        yield { type: 'text-start', id: 't' } as UIMessageChunk;
        yield { type: 'text-delta', id: 't', delta: 'The answer ' } as UIMessageChunk;
        yield { type: 'text-delta', id: 't', delta: 'is ', providerMetadata: { mock: { cached: true } } } as UIMessageChunk;
        yield { type: 'text-delta', id: 't', delta: '42.' } as UIMessageChunk;
        yield { type: 'text-end', id: 't' } as UIMessageChunk;
        yield { type: 'finish' } as UIMessageChunk;
      })(),
    );
    const { turnId, events } = await send(question('u', 'x'));
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'turn.end', status: 'complete', textLength: 'The answer is 42.'.length, textSha256: await sha256Hex('The answer is 42.') });
    const message = await referenceMessage(chunksOf(turnId, events) as never);
    expect(message!.parts).toEqual([{ type: 'text', text: 'The answer is 42.', state: 'done', providerMetadata: { mock: { cached: true } } }]);
  });

  it('turns plain content into a user message, and takes the history an app supplies', async () => {
    const seen: UIMessageAgentContext[] = [];
    const earlier = [question('old', 'Hi')];
    server = await startTestServer({
      agent: uiMessageAgent(
        (context) => {
          seen.push(context);
          return (async function* () {
            yield { type: 'start' } as UIMessageChunk;
            yield { type: 'finish' } as UIMessageChunk;
          })();
        },
        { history: () => earlier },
      ),
    });
    const { events } = await send('plain text');
    expect(events.at(-1)).toMatchObject({ status: 'complete' });
    expect(seen[0]!.message).toMatchObject({ role: 'user', parts: [{ type: 'text', text: 'plain text' }] });
    expect(seen[0]!.messages).toEqual([...earlier, seen[0]!.message]);
  });

  it.each([
    ['an error chunk', [{ type: 'start' }, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'so far' }, { type: 'error', errorText: 'model overloaded' }, { type: 'text-delta', id: 't', delta: 'never' }], 'agent_failed'],
    ['a chunk that is not an object with a string type', [{ type: 'start' }, { kind: 'odd' }], 'invalid_agent_event'],
    ['a throw', [{ type: 'start' }, 'throw'], 'agent_failed'],
  ])('ends the turn failed on %s, keeping what was logged', async (_name, script, code) => {
    await start(() =>
      (async function* () {
        for (const item of script) {
          if (item === 'throw') throw new Error('boom');
          yield item as UIMessageChunk;
        }
      })(),
    );
    const { events } = await send(question('u', 'x'));
    expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code } });
    expect(JSON.stringify(events)).not.toContain('never');
    if (script.some((item) => typeof item === 'object' && (item as { type?: string }).type === 'error')) {
      expect(events.some((event) => event.type === 'part' && event.part.type === 'error' && event.part['errorText'] === 'model overloaded')).toBe(true);
    }
  });

  it('never logs transient data chunks', async () => {
    await start(() =>
      (async function* () {
        yield { type: 'start' } as UIMessageChunk;
        yield { type: 'data-progress', data: 1, transient: true } as UIMessageChunk;
        yield { type: 'data-result', data: 2 } as UIMessageChunk;
        yield { type: 'finish' } as UIMessageChunk;
      })(),
    );
    const { events } = await send(question('u', 'x'));
    expect(events.filter((event) => event.type === 'part').map((event) => (event as { part: { type: string } }).part.type)).toEqual(['start', 'data-result', 'finish']);
  });

  it('ends the turn cancelled on cancel, aborting the producer’s signal and its stream', async () => {
    let signal: AbortSignal | undefined;
    let cancelled = false;
    await start((context) => {
      signal = context.signal;
      return new ReadableStream<UIMessageChunk>({
        start(controller) {
          controller.enqueue({ type: 'start' });
          controller.enqueue({ type: 'text-start', id: 't' });
        },
        cancel() {
          cancelled = true;
        },
      });
    });
    const answer = await submitMessage(server!.baseUrl, 'conv-ai', question('u', 'x') as never);
    await expect.poll(async () => (await server!.log.read(answer.turnId, 0, 10)).events.length).toBe(3);
    expect((await fetch(`${server!.baseUrl}/turns/${answer.turnId}/cancel`, { method: 'POST' })).status).toBe(202);
    await waitForTurnEnd(server!.log, answer.turnId);
    const { events } = await replayAll(server!.baseUrl, answer.turnId);
    expect(events.at(-1)).toMatchObject({ status: 'cancelled' });
    expect(signal?.aborted).toBe(true);
    await expect.poll(() => cancelled).toBe(true);
  });
});

async function collect(stream: ReadableStream<UIMessageChunk>): Promise<Record<string, unknown>[]> {
  const chunks: Record<string, unknown>[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk as Record<string, unknown>);
  return chunks;
}
