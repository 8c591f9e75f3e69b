/**
 * The ChatTransport against the real server (uiMessageAgent over streamText and the AI
 * SDK's test model), through the fault proxy, in Node. The oracle is the AI SDK's own
 * fold (`readUIMessageStream`) of the same model's stream, with the turn id as message id.
 */
import '../client/support/dom-shim.js';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { streamAnswer } from '../../../examples/chat/ai-model.js';
import { createChatTransport } from '../../../src/ai-sdk/index.js';
import { createLifeline } from '../../../src/client.js';
import { uiMessageAgent } from '../../../src/server/ai-sdk/index.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import { isStreamRequest, startFaultProxy, type FaultPlan, type FaultProxy } from '../../fixtures/fault-proxy.js';
import { startTestServer, waitForTurnEnd } from '../../fixtures/server.js';
import { FAST_RETRY } from '../client/support/follow.js';
import { referenceMessage } from './chunks.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const WORDS = 40;
const DELAY = 5;
let counter = 0;
const question = (text = 'What is the weather in Bergen?'): UIMessage => ({ id: `user-${++counter}`, role: 'user', parts: [{ type: 'text', text }] });

async function setup(plan?: (request: { method: string; path: string }) => FaultPlan) {
  const log = createMemoryTurnLog();
  const server = await startTestServer({ store: log, agent: uiMessageAgent(({ messages, signal }) => streamAnswer(messages, { delayMs: DELAY, words: WORDS, signal }), { log }) });
  const proxy: FaultProxy = await startFaultProxy({ targetPort: Number(new URL(server.origin).port), ...(plan && { plan }) });
  cleanup.push(() => server.close(), () => proxy.close());
  const open = (store: MemoryStore = createMemoryStore()) => {
    const client = createLifeline({ baseUrl: `${proxy.origin}/api`, storage: store, retry: FAST_RETRY, stall: { firstEventMs: 2000, idleMs: 400 } });
    cleanup.push(() => client.dispose());
    return { client, store, transport: createChatTransport(client) };
  };
  return { server, log, proxy, open };
}

/** The message the AI SDK itself builds from the model's stream, as turn `turnId`. */
async function reference(messages: UIMessage[], turnId: string): Promise<UIMessage | undefined> {
  const chunks: Record<string, unknown>[] = [];
  for await (const chunk of (await streamAnswer(messages, { delayMs: 0, words: WORDS })) as unknown as AsyncIterable<Record<string, unknown>>) {
    chunks.push(chunk.type === 'start' ? { ...chunk, messageId: turnId } : chunk);
  }
  return referenceMessage(chunks);
}

/**
 * Reads a stream to its end through the AI SDK's own fold, sampling the message as it
 * grows: at no moment a part that the final message does not have at that place (a
 * duplicated part shifts every later one), nor a text that is not a prefix of the final.
 */
async function read(stream: ReadableStream<UIMessageChunk>, onChunk?: (chunk: UIMessageChunk, index: number) => void) {
  const chunks: UIMessageChunk[] = [];
  const [mine, theirs] = stream.tee();
  const reading = (async () => {
    for await (const chunk of mine as unknown as AsyncIterable<UIMessageChunk>) {
      chunks.push(chunk);
      onChunk?.(chunk, chunks.length - 1);
    }
  })();
  const samples: { types: string[]; text: string }[] = [];
  const textOf = (message: UIMessage) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  let message: UIMessage | undefined;
  for await (const next of readUIMessageStream({ stream: theirs, terminateOnError: true })) {
    message = structuredClone(next);
    samples.push({ types: message.parts.map((part) => part.type), text: textOf(message) });
  }
  await reading;
  const final = message ? message.parts.map((part) => part.type) : [];
  for (const sample of samples) {
    expect(final.slice(0, sample.types.length)).toEqual(sample.types);
    expect(textOf(message!).startsWith(sample.text)).toBe(true);
  }
  return { chunks, message };
}

const send = (transport: ReturnType<typeof createChatTransport>, chatId: string, messages: UIMessage[], abortSignal?: AbortSignal) =>
  transport.sendMessages({ chatId, messages, abortSignal, trigger: 'submit-message', messageId: undefined });

describe('createChatTransport', () => {
  it('streams a sent message as the model’s UIMessage, the turn id as message id, repairing cuts inside the stream', async () => {
    const { open, proxy, server } = await setup();
    const { transport } = open();
    const user = question();
    let cut = false;
    const { chunks, message } = await read(await send(transport, 'chat-a', [user]), (chunk) => {
      // Cut the stream twice mid-turn: once in the reasoning, once in the text.
      if ((chunk.type === 'reasoning-delta' || chunk.type === 'text-delta') && !cut) cut = proxy.resetWhere(isStreamRequest) > 0;
      if (chunk.type === 'tool-output-available') cut = false;
    });
    const turns = await server.log.listTurns('chat-a', 'anonymous', 10);
    expect(turns).toHaveLength(1);
    expect(chunks[0]).toEqual({ type: 'start', messageId: turns[0]!.id });
    expect(chunks.some((chunk) => chunk.type === 'error' || chunk.type === 'abort')).toBe(false);
    expect(proxy.cuts).toBeGreaterThanOrEqual(2);
    expect(message).toEqual(await reference([user], turns[0]!.id));
    expect(turns[0]!.content).toEqual(user);
  });

  it('stop() cancels the turn on the server, ends the stream with abort, and is never resumed', async () => {
    const { open, server } = await setup();
    const { transport } = open();
    const stop = new AbortController();
    const { chunks } = await read(await send(transport, 'chat-stop', [question()], stop.signal), (chunk) => {
      if (chunk.type === 'text-delta') stop.abort();
    });
    expect(chunks.at(-1)).toEqual({ type: 'abort' });
    const [turn] = await server.log.listTurns('chat-stop', 'anonymous', 10);
    expect((await waitForTurnEnd(server.log, turn!.id)).status).toBe('cancelled');
    expect(await transport.reconnectToStream({ chatId: 'chat-stop' })).toBeNull();
  });

  it('withdraws a message still queued (server down) when stopped: it is never sent', async () => {
    const { open, server, proxy } = await setup(() => ({ kind: 'close' }));
    const { transport, client } = open();
    const stop = new AbortController();
    const stream = await send(transport, 'chat-down', [question()], stop.signal);
    await expect.poll(() => client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThanOrEqual(2);
    await expect.poll(() => client.outbox.getSnapshot()[0]?.state).toBe('queued');
    stop.abort();
    expect((await read(stream)).chunks).toEqual([{ type: 'abort' }]);
    await expect.poll(() => client.outbox.getSnapshot().length).toBe(0);
    proxy.setPlan(() => ({ kind: 'pass' }));
    expect(await server.log.listTurns('chat-down', 'anonymous', 10)).toEqual([]);
  });

  it('sends through an outage: the message waits in the outbox and streams once the server is back', async () => {
    const { open, server, proxy } = await setup(() => ({ kind: 'close' }));
    const { transport, client } = open();
    const user = question('Weather in Lisbon, please?');
    const stream = await send(transport, 'chat-outage', [user]);
    await expect.poll(() => client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThanOrEqual(2);
    proxy.setPlan(() => ({ kind: 'pass' }));
    const { message } = await read(stream);
    const turns = await server.log.listTurns('chat-outage', 'anonymous', 10);
    expect(turns).toHaveLength(1);
    expect(message).toEqual(await reference([user], turns[0]!.id));
  });

  it('a message still queued when the page reloads: reconnectToStream waits for it to be accepted, then streams its answer', async () => {
    const { open, server, proxy } = await setup(() => ({ kind: 'close' }));
    const first = open();
    const user = question('Weather in Lisbon, please?');
    await send(first.transport, 'chat-queued', [user]);
    await expect.poll(() => first.client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThanOrEqual(2);
    first.client.dispose();

    const second = open(first.store);
    const reconnecting = second.transport.reconnectToStream({ chatId: 'chat-queued' });
    let settled = false;
    void reconnecting.then(() => (settled = true));
    // The reloaded page tried to send it again and was refused: still waiting.
    const attempts = (await second.store.loadOutbox()).items[0]?.attempts ?? 0;
    await expect.poll(() => second.client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThan(attempts);
    expect(settled).toBe(false);
    proxy.setPlan(() => ({ kind: 'pass' }));
    const stream = await reconnecting;
    expect(stream).not.toBeNull();
    const { message } = await read(stream!);
    const turns = await server.log.listTurns('chat-queued', 'anonymous', 10);
    expect(turns).toHaveLength(1);
    expect(message).toEqual(await reference([user], turns[0]!.id));
  });

  it('reconnects a reloaded page to the turn from its first chunk; concurrent calls share the turn, an aborted one only detaches', async () => {
    const { open, server } = await setup();
    const first = open();
    const user = question();
    const sent = await send(first.transport, 'chat-reload', [user]);
    const reader = sent.getReader();
    for (let next = await reader.read(); !next.done && next.value.type !== 'text-delta'; next = await reader.read());
    // The page goes away mid-turn (its storage stays); a new page starts on the same storage.
    await first.client.ready;
    first.client.dispose();
    const second = open(first.store);
    const detach = new AbortController();
    const [a, b] = await Promise.all([
      second.transport.reconnectToStream({ chatId: 'chat-reload', abortSignal: detach.signal }),
      second.transport.reconnectToStream({ chatId: 'chat-reload' }),
    ]);
    detach.abort();
    const [turn] = await server.log.listTurns('chat-reload', 'anonymous', 10);
    const detached = (await read(a!)).chunks;
    expect(detached.at(-1)?.type).not.toBe('finish');
    const { chunks, message } = await read(b!);
    expect(chunks[0]).toEqual({ type: 'start', messageId: turn!.id });
    expect(message).toEqual(await reference([user], turn!.id));
    // Delivered to a finished stream: nothing more to resume.
    expect(await second.transport.reconnectToStream({ chatId: 'chat-reload' })).toBeNull();
  });

  it('loads the conversation as UIMessages on a new device, and a regenerated message keeps only its newest answer', async () => {
    const { open, server } = await setup();
    const { transport } = open();
    const one = question('Weather in Bergen?');
    const two = question('And in Tromsø?');
    await read(await send(transport, 'chat-load', [one]));
    await read(await send(transport, 'chat-load', [one, two]));
    // Regenerate the second answer: the same user message is sent again.
    const again = await read(await transport.sendMessages({ chatId: 'chat-load', messages: [one, two], trigger: 'regenerate-message', messageId: 'x', abortSignal: undefined }));
    const turns = (await server.log.listTurns('chat-load', 'anonymous', 10)).reverse();
    expect(turns).toHaveLength(3);
    expect(again.message?.id).toBe(turns[2]!.id);

    const device = open();
    const loaded = await device.transport.loadMessages('chat-load');
    expect(loaded.map((message) => message.id)).toEqual([one.id, turns[0]!.id, two.id, turns[2]!.id]);
    expect(loaded[0]).toEqual(one);
    expect(loaded[1]).toEqual(await reference([one], turns[0]!.id));
    expect(loaded[3]).toEqual(again.message);
    // The same page's storage gives the same answer without the server.
    expect(await transport.loadMessages('chat-load')).toEqual(loaded);
  });

  it('cancel(chatId) stops the chat’s live turn whichever stream shows it', async () => {
    const { open, server } = await setup();
    const { transport } = open();
    const stream = await send(transport, 'chat-cancel', [question()]);
    let cancelling: Promise<void> | undefined;
    const { chunks } = await read(stream, (chunk) => {
      if (chunk.type === 'reasoning-delta') cancelling ??= transport.cancel('chat-cancel');
    });
    await cancelling;
    expect(chunks.at(-1)).toEqual({ type: 'abort' });
    const [turn] = await server.log.listTurns('chat-cancel', 'anonymous', 10);
    expect(turn!.status).toBe('cancelled');
  });
});
