/**
 * Which turn `reconnectToStream` and `cancel(chatId)` pick (issue 23, W1), and that an aborted
 * `reconnectToStream` settles at once (H5). Real server and client over loopback; turns are
 * written into the server's log directly, so their ids sort the wrong way on purpose.
 */
import '../client/support/dom-shim.js';
import type { UIMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { createChatTransport } from '../../../src/ai-sdk/index.js';
import { createLifeline } from '../../../src/client.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { createMemoryStore, type MemoryStore } from '../../../src/storage/memory-store.js';
import { startFaultProxy } from '../../fixtures/fault-proxy.js';
import { startTestServer } from '../../fixtures/server.js';
import { FAST_RETRY } from '../client/support/follow.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const user = (id: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text: `question ${id}` }] });

/** A turn of `chatId` written straight into the log: started, one text chunk, ended when `ended`. */
async function writeTurn(log: TurnLog, chatId: string, id: string, minutesAgo: number, ended: boolean): Promise<void> {
  const createdAt = new Date(Date.now() - minutesAgo * 60_000).toISOString();
  const turn = await log.createTurn({ id, conversationId: chatId, messageId: `m-${id}`, principal: 'anonymous', content: user(`u-${id}`) as never, createdAt });
  await log.append(id, { type: 'turn.start', messageId: turn.messageId, conversationId: chatId, createdAt });
  await log.append(id, { type: 'delta', text: `answer ${id}` });
  if (ended) await log.append(id, { type: 'turn.end', status: 'complete', textLength: `answer ${id}`.length, textSha256: await sha256Hex(`answer ${id}`) });
}

async function setup(plan?: 'down') {
  const server = await startTestServer();
  const proxy = await startFaultProxy({ targetPort: Number(new URL(server.origin).port), ...(plan && { plan: () => ({ kind: 'close' as const }) }) });
  cleanup.push(() => server.close(), () => proxy.close());
  const open = (store: MemoryStore = createMemoryStore()) => {
    const client = createLifeline({ baseUrl: `${proxy.origin}/api`, storage: store, retry: FAST_RETRY });
    cleanup.push(() => client.dispose());
    return { client, store, transport: createChatTransport(client, { listTimeoutMs: 5000 }) };
  };
  return { server, proxy, open };
}

// Ids that sort against their age: a pick by id (or by adoption time) takes the old one.
const OLD = 'zzzzzzzzzzzzzzzzzzzz1';
const NEW = 'aaaaaaaaaaaaaaaaaaaa1';

describe('the newest turn, by the server’s order (W1)', () => {
  it('a new device resumes the live turn, not an older one that ended unseen', async () => {
    const { server, open } = await setup();
    await writeTurn(server.log, 'chat-w1', OLD, 5, true);
    await writeTurn(server.log, 'chat-w1', NEW, 1, false);
    const { transport } = open();
    const stream = await transport.reconnectToStream({ chatId: 'chat-w1' });
    expect(stream).not.toBeNull();
    const first = await stream!.getReader().read();
    expect(first.value).toEqual({ type: 'start', messageId: NEW });
  });

  it('after loadMessages too, and cancel(chatId) cancels the newest live turn only', async () => {
    const { server, open } = await setup();
    await writeTurn(server.log, 'chat-w1c', OLD, 5, false);
    await writeTurn(server.log, 'chat-w1c', NEW, 1, false);
    const { transport } = open();
    const loaded = await transport.loadMessages('chat-w1c');
    expect(loaded.map((message) => message.id)).toEqual([`u-${OLD}`, OLD, `u-${NEW}`, NEW]);
    await transport.cancel('chat-w1c');
    expect(await server.log.isCancelRequested(NEW)).toBe(true);
    expect(await server.log.isCancelRequested(OLD)).toBe(false);
    // Stopped here: never resumed on this device, even before the end arrives.
    expect(await transport.reconnectToStream({ chatId: 'chat-w1c' })).toBeNull();
    // These turns have no producer: the test ends the cancelled one as a producer would.
    await server.log.append(NEW, { type: 'turn.end', status: 'cancelled', textLength: `answer ${NEW}`.length, textSha256: await sha256Hex(`answer ${NEW}`) });
    expect(await open().transport.reconnectToStream({ chatId: 'chat-w1c' })).toBeNull();
  });
});

describe('an aborted reconnectToStream (H5)', () => {
  it('settles at once while the chat’s last message is still on its way', async () => {
    const { open } = await setup('down');
    const first = open();
    void (await first.transport.sendMessages({ chatId: 'chat-h5', messages: [user('u-h5')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }));
    await expect.poll(() => first.client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThanOrEqual(1);
    first.client.dispose();

    const second = open(first.store);
    const abort = new AbortController();
    const reconnecting = second.transport.reconnectToStream({ chatId: 'chat-h5', abortSignal: abort.signal });
    await expect.poll(() => second.client.outbox.getSnapshot()[0]?.attempts ?? 0).toBeGreaterThanOrEqual(1);
    abort.abort();
    // Today's lookup ignores the abort and waits for the acceptance (the server is down): this never settles.
    await expect(reconnecting).resolves.toBeNull();
  });

  it('settles at once when aborted before the conversation is ready', async () => {
    const { open } = await setup();
    const { transport } = open();
    const abort = new AbortController();
    abort.abort();
    await expect(transport.reconnectToStream({ chatId: 'chat-h5b', abortSignal: abort.signal })).resolves.toBeNull();
  });
});
