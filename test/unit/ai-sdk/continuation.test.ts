/**
 * Continuation turns through the ChatTransport (docs/protocol.md §9, since 1.2), in Node: the
 * real server (uiMessageAgent over the real `streamText` and the AI SDK's test model), real
 * clients over loopback through the fault proxy. The oracle runs the same model the way the AI
 * SDK's own transport does (a plain route: `toUIMessageStream({ originalMessages })`, folded by
 * `readUIMessageStream` into the message `useChat` holds), with the turn id as message id.
 */
import '../client/support/dom-shim.js';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { pageTools, streamTools } from '../../../examples/chat/ai-tools-model.js';
import { createChatTransport } from '../../../src/ai-sdk/index.js';
import { continuationKey } from '../../../src/ai-sdk/continuation.js';
import { createLifeline } from '../../../src/client.js';
import { uiMessageAgent } from '../../../src/server/ai-sdk/index.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import { isStreamRequest, startFaultProxy } from '../../fixtures/fault-proxy.js';
import { startTestServer } from '../../fixtures/server.js';
import { FAST_RETRY } from '../client/support/follow.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

let counter = 0;
const question = (text: string): UIMessage => ({ id: `user-${++counter}`, role: 'user', parts: [{ type: 'text', text }] });

async function setup(delayMs = 0) {
  let executed = 0;
  const seen: { context: unknown; tier: string | null }[] = [];
  const agent = uiMessageAgent(({ messages, context, headers, signal }) => {
    seen.push({ context, tier: headers.get('x-tier') });
    const note = context ? `You sent ${JSON.stringify(context)} as ${headers.get('x-tier') ?? 'nobody'}.` : '';
    return streamTools(messages, pageTools(() => executed++), { delayMs, note, signal });
  });
  const server = await startTestServer({ agent });
  const proxy = await startFaultProxy({ targetPort: Number(new URL(server.origin).port) });
  cleanup.push(() => server.close(), () => proxy.close());
  const errors: unknown[] = [];
  const open = (store: MemoryStore = createMemoryStore()) => {
    const client = createLifeline({ baseUrl: `${proxy.origin}/api`, storage: store, retry: FAST_RETRY, stall: { firstEventMs: 2000, idleMs: 400 } });
    cleanup.push(() => client.dispose());
    return { client, store, transport: createChatTransport(client, { onError: (error) => errors.push(error) }) };
  };
  return { server, proxy, open, errors, executed: () => executed, seen };
}

type Transport = ReturnType<typeof createChatTransport>;
const send = (transport: Transport, chatId: string, messages: UIMessage[], options: { body?: object; metadata?: unknown; headers?: Record<string, string> } = {}) =>
  transport.sendMessages({ chatId, messages, abortSignal: undefined, trigger: 'submit-message', messageId: messages.at(-1)?.role === 'assistant' ? messages.at(-1)!.id : undefined, ...options });

/** The message `useChat` holds after `stream`: `base` extended (a continuation), or a new one. */
async function fold(stream: ReadableStream<UIMessageChunk>, base?: UIMessage): Promise<{ message: UIMessage | undefined; chunks: UIMessageChunk[] }> {
  const chunks: UIMessageChunk[] = [];
  const seen = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, out) => (chunks.push(chunk), out.enqueue(chunk)) }));
  let message: UIMessage | undefined;
  for await (const next of readUIMessageStream({ stream: seen, ...(base && { message: structuredClone(base) }) })) {
    message = structuredClone(next);
    // No render shows a part twice: tool calls are unique by id.
    const ids = message.parts.flatMap((part) => ('toolCallId' in part ? [part.toolCallId] : []));
    expect(new Set(ids).size).toBe(ids.length);
  }
  return { message, chunks };
}

/** What the AI SDK's own route gives for `messages`, the response message named `id` when it is new. */
async function reference(messages: UIMessage[], id: string): Promise<UIMessage | undefined> {
  const stream = (await streamTools(messages, pageTools())).pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, out) => out.enqueue(chunk.type === 'start' ? { ...chunk, messageId: id } : chunk) }),
  );
  const last = messages.at(-1);
  return (await fold(stream, last?.role === 'assistant' ? last : undefined)).message;
}

/** `message` with its tool call answered as `addToolOutput` / `addToolApprovalResponse` do. */
function answered(message: UIMessage, answer: Record<string, unknown>): UIMessage {
  return { ...message, parts: message.parts.map((part) => ('toolCallId' in part ? ({ ...part, ...answer } as typeof part) : part)) };
}
const located = (message: UIMessage, city: string) => answered(message, { state: 'output-available', output: { city } });
const approve = (message: UIMessage, approved: boolean) => {
  const part = message.parts.find((candidate) => 'approval' in candidate) as { approval: { id: string } };
  return answered(message, { state: 'approval-responded', approval: { id: part.approval.id, approved } });
};

describe('continuations through the transport', () => {
  it('a client tool’s output continues the same message; the same answer from another device is the same turn; another answer is refused (422)', async () => {
    const { open, server, errors } = await setup();
    const { transport } = open();
    const user = question('Where am I?');
    const first = (await fold(await send(transport, 'chat-tool', [user]))).message!;
    const [t1] = await server.log.listTurns('chat-tool', 'anonymous', 10);
    expect(first).toEqual(await reference([user], t1!.id));
    expect(first.parts.find((part) => 'toolCallId' in part)).toMatchObject({ state: 'input-available', toolCallId: 'call-locate' });

    const answer = located(first, 'Bergen');
    const { message, chunks } = await fold(await send(transport, 'chat-tool', [user, answer]), answer);
    const turns = (await server.log.listTurns('chat-tool', 'anonymous', 10)).reverse();
    expect(turns).toHaveLength(2);
    expect(turns[1]!.continues).toBe(t1!.id);
    expect(chunks[0]).toEqual({ type: 'start', messageId: t1!.id });
    expect(message).toEqual(await reference([user, answer], t1!.id));
    expect(message!.parts.at(-1)).toMatchObject({ type: 'text', text: expect.stringContaining('Bergen') });

    // Another device answers the same call the same way: no new turn, the same continuation.
    const other = open();
    const again = await fold(await send(other.transport, 'chat-tool', [user, answer]), answer);
    expect(again.message).toEqual(message);
    expect(await server.log.listTurns('chat-tool', 'anonymous', 10)).toHaveLength(2);

    // A different answer to the same call: the same key, another body.
    const refused = await fold(await send(other.transport, 'chat-tool', [user, located(first, 'Oslo')]));
    expect(refused.chunks.at(-1)).toMatchObject({ type: 'error' });
    expect(errors).toContainEqual(expect.objectContaining({ serverCode: 'idempotency_key_reused' }));
    expect(await server.log.listTurns('chat-tool', 'anonymous', 10)).toHaveLength(2);

    // A new device loads the conversation folded: the continuation is part of the message.
    expect(await open().transport.loadMessages('chat-tool')).toEqual([user, message]);
  });

  it('a tool call still waiting for its output loads waiting on another device', async () => {
    const { open } = await setup();
    const { transport } = open();
    const user = question('Where am I?');
    const first = (await fold(await send(transport, 'chat-wait', [user]))).message!;
    const loaded = await open().transport.loadMessages('chat-wait');
    expect(loaded).toEqual([user, first]);
    expect(loaded[1]!.parts.find((part) => 'toolCallId' in part)).toMatchObject({ state: 'input-available' });
  });

  it('approvals: approved runs execute once however often it is sent; denied never runs it', async () => {
    const { open, server, executed } = await setup();
    const a = open();
    const b = open();
    const user = question('Transfer 5 to Bob');
    const first = (await fold(await send(a.transport, 'chat-pay', [user]))).message!;
    expect(first.parts.find((part) => 'approval' in part)).toMatchObject({ state: 'approval-requested' });
    const yes = approve(first, true);
    const [one, two] = await Promise.all([fold(await send(a.transport, 'chat-pay', [user, yes]), yes), fold(await send(b.transport, 'chat-pay', [user, yes]), yes)]);
    expect(one.message).toEqual(two.message);
    const [t1] = (await server.log.listTurns('chat-pay', 'anonymous', 10)).reverse();
    expect(one.message).toEqual(await reference([user, yes], t1!.id));
    expect(executed()).toBe(1);
    expect(await server.log.listTurns('chat-pay', 'anonymous', 10)).toHaveLength(2);

    const user2 = question('Transfer 5 to Bob again');
    const second = (await fold(await send(a.transport, 'chat-deny', [user2]))).message!;
    const no = approve(second, false);
    const denied = (await fold(await send(a.transport, 'chat-deny', [user2, no]), no)).message!;
    expect(denied.parts.find((part) => 'approval' in part)).toMatchObject({ state: 'output-denied' });
    expect(denied.parts.at(-1)).toMatchObject({ type: 'text', text: 'I did not send it.' });
    expect(executed()).toBe(1);
  });

  it('cuts and a reload during a continuation: the resume replays the whole message, equal to the reference', async () => {
    const { open, server, proxy } = await setup(15);
    const first = open();
    const user = question('Where am I?');
    const start = (await fold(await send(first.transport, 'chat-cut', [user]))).message!;
    const answer = located(start, 'Tromsø');
    const reader = (await send(first.transport, 'chat-cut', [user, answer])).getReader();
    let deltas = 0;
    for (let next = await reader.read(); !next.done && deltas < 3; next = await reader.read()) {
      if (next.value.type === 'text-delta' && ++deltas === 1) proxy.resetWhere(isStreamRequest);
    }
    await first.client.ready;
    first.client.dispose();
    // The page reloads mid-continuation, on the same storage.
    const second = open(first.store);
    const loaded = await second.transport.loadMessages('chat-cut');
    expect(loaded.map((message) => message.id)).toEqual([user.id, start.id]);
    const stream = await second.transport.reconnectToStream({ chatId: 'chat-cut' });
    const { message, chunks } = await fold(stream!);
    expect(chunks.filter((chunk) => chunk.type === 'start')).toHaveLength(1);
    expect(chunks.filter((chunk) => chunk.type === 'finish')).toHaveLength(1);
    expect(message).toEqual(await reference([user, answer], start.id));
    expect(await server.log.listTurns('chat-cut', 'anonymous', 10)).toHaveLength(2);
    expect(proxy.cuts).toBeGreaterThanOrEqual(1);
  });

  it('body, metadata and headers of a request reach the agent for that turn only', async () => {
    const { open, seen } = await setup();
    const { transport } = open();
    const user = question('Hello there');
    const { message } = await fold(await send(transport, 'chat-data', [user], { body: { model: 'small' }, metadata: { locale: 'nb' }, headers: { 'x-tier': 'pro' } }));
    expect(seen[0]).toEqual({ context: { body: { model: 'small' }, metadata: { locale: 'nb' } }, tier: 'pro' });
    expect(message!.parts.at(-1)).toMatchObject({ type: 'text', text: expect.stringContaining('"model":"small"') });
    await fold(await send(transport, 'chat-data', [user, message!, question('Hello again')]));
    expect(seen[1]).toEqual({ context: undefined, tier: null });
  });

  it('derives one key per message and set of answered calls, in the key alphabet', () => {
    const message: UIMessage = { id: 'm1', role: 'assistant', parts: [{ type: 'dynamic-tool', toolName: 't', toolCallId: 'b', state: 'output-available', input: {}, output: 1 }, { type: 'dynamic-tool', toolName: 't', toolCallId: 'a', state: 'output-available', input: {}, output: 2 }] };
    const reordered = { ...message, parts: [...message.parts].reverse() };
    const otherOutput = answered(message, { output: 3 });
    const waiting = answered(message, { state: 'input-available' });
    expect(continuationKey(message)).toMatch(/^[A-Za-z0-9_-]{16,128}$/);
    expect(continuationKey(reordered)).toBe(continuationKey(message));
    expect(continuationKey(otherOutput)).toBe(continuationKey(message));
    expect(continuationKey(waiting)).not.toBe(continuationKey(message));
    expect(continuationKey({ ...message, id: 'm2' })).not.toBe(continuationKey(message));
  });
});
