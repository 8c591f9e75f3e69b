/**
 * `createChatTransport`: the AI SDK's `useChat` over a Lifeline client (docs/protocol.md §9).
 * Built on the client's public API only: a message goes through the durable outbox, a turn
 * is followed by the client (one network stream per turn across tabs), and the streams
 * handed to `useChat` replay each turn from its first chunk.
 */
import type { ChatTransport, UIMessage } from 'ai';
import { realTimers, type TimerHandle } from '../ports/timers.js';
import type { LifelineClient, TurnSnapshot } from '../types.js';
import { createDeliveredMarks } from './delivered.js';
import { conversationMessages, resumable } from './messages.js';
import { sendStream } from './send-stream.js';
import { turnStream } from './turn-stream.js';

export interface ChatTransportOptions {
  /**
   * How long `loadMessages` waits for the server's list of the conversation's turns
   * before answering with what this device holds (the list still lands in the client), ms.
   * Default 3 000.
   */
  listTimeoutMs?: number;
  /** Prefix of the `localStorage` keys that remember the last turn delivered per chat. Default `'lifeline-ai-sdk:'`. */
  storageKey?: string;
  /** Failures the transport cannot hand to `useChat` (a cancel or list that failed). Default: none. */
  onError?: (error: unknown) => void;
}

/** A `ChatTransport` that also cancels a chat's live turn and loads its messages. */
export interface LifelineChatTransport extends ChatTransport<UIMessage> {
  /** Replays from the first chunk: `useChat` resets the message it resumes. */
  readonly resumeStreamIsReplay: true;
  /** Cancels the chat's newest turn that has not ended, whichever stream shows it (a Stop button after a reload). */
  cancel(chatId: string): Promise<void>;
  /** The conversation as `UIMessage`s, from this device's storage and the server's log, for `useChat`'s `messages`. */
  loadMessages(chatId: string): Promise<UIMessage[]>;
}

const isLive = (turn: TurnSnapshot): boolean => !['complete', 'failed', 'cancelled'].includes(turn.status);

/**
 * The chat's turn ids in the server's order, oldest first; none when the list fails or takes
 * longer than `timeoutMs` (the list still lands in the client when it comes).
 */
async function listedOrder(client: LifelineClient, chatId: string, timeoutMs: number, report: (error: unknown) => void): Promise<string[]> {
  let order: string[] = [];
  let timer: TimerHandle | undefined;
  const listed = client.recover(chatId).then(
    (turns) => (order = turns.map((turn) => turn.id).reverse()),
    report,
  );
  await Promise.race([listed, new Promise((resolve) => (timer = realTimers.set(() => resolve(undefined), timeoutMs)))]);
  realTimers.clear(timer);
  return order;
}

/**
 * Creates the transport. `chatId` is the conversation id.
 *
 * @example
 * const transport = createChatTransport(client);
 * const { messages, sendMessage, stop } = useChat({ id: chatId, transport, messages: await transport.loadMessages(chatId), resume: true });
 */
export function createChatTransport(client: LifelineClient, options: ChatTransportOptions = {}): LifelineChatTransport {
  const marks = createDeliveredMarks(options.storageKey ?? 'lifeline-ai-sdk:');
  const report = (error: unknown): void => options.onError?.(error);
  /** Reconnects under way per chat: concurrent calls answer the same turn. */
  const lookups = new Map<string, Promise<string | undefined>>();

  const turnsOf = (chatId: string): TurnSnapshot[] => client.turns.getSnapshot().filter((turn) => turn.conversationId === chatId);

  /**
   * The turn of the chat's last message when that message is still on its way (sent by an
   * earlier page, or by another tab, and not accepted yet): resolves once the server
   * accepted it, with `undefined` if it fails or is withdrawn. `undefined` at once when the
   * last message is answered or refused already.
   */
  function unanswered(chatId: string): Promise<string | undefined> | undefined {
    const conversation = client.conversation(chatId);
    const last = conversation.getSnapshot().items.at(-1);
    if (last?.role !== 'user' || last.submission === undefined || last.submission.state === 'failed') return undefined;
    return new Promise((resolve) => {
      const check = (): void => {
        const items = conversation.getSnapshot().items;
        const at = items.findIndex((item) => item.key === last.key);
        const answer = items[at + 1]?.turn;
        if (at !== -1 && !answer && items[at]?.submission?.state !== 'failed') return;
        stop();
        resolve(at === -1 ? undefined : answer?.id);
      };
      const stop = conversation.subscribe(check);
      check();
    });
  }

  /** The chat's newest turn not yet delivered to a finished stream here (waiting for one still being sent). */
  async function undelivered(chatId: string): Promise<string | undefined> {
    await client.conversation(chatId).ready;
    const sending = unanswered(chatId);
    if (sending) return sending;
    const newest = turnsOf(chatId).at(-1);
    return newest && marks.get(chatId) !== newest.id ? newest.id : undefined;
  }

  return {
    resumeStreamIsReplay: true,

    sendMessages({ chatId, messages, abortSignal }) {
      const message = messages.findLast((candidate) => candidate.role === 'user');
      if (!message) return Promise.reject(new TypeError('sendMessages needs a user message.'));
      return Promise.resolve(sendStream(client, chatId, message, { abortSignal, marks, report }));
    },

    async reconnectToStream({ chatId, abortSignal }) {
      let lookup = lookups.get(chatId);
      if (!lookup) {
        lookups.set(chatId, (lookup = undelivered(chatId).finally(() => lookups.delete(chatId))));
      }
      const turnId = await lookup;
      if (!turnId || abortSignal?.aborted) return null;
      // Its abort only detaches: useChat aborts a resume that another one replaces (StrictMode).
      return turnStream(client.turn(turnId), { signal: abortSignal, onFinished: () => marks.set(chatId, turnId) });
    },

    async cancel(chatId) {
      await client.conversation(chatId).ready;
      const live = turnsOf(chatId).filter(isLive).at(-1);
      if (live) await client.turn(live.id).cancel();
    },

    async loadMessages(chatId) {
      const conversation = client.conversation(chatId);
      await conversation.ready;
      const order = await listedOrder(client, chatId, options.listTimeoutMs ?? 3000, report);
      const messages = conversationMessages(conversation.getSnapshot().items, order);
      // The newest turn, when not delivered yet, is what the next reconnectToStream replays.
      return marks.get(chatId) === messages.at(-1)?.id ? messages : resumable(messages);
    },
  };
}
