/**
 * `createChatTransport`: the AI SDK's `useChat` over a Lifeline client (docs/protocol.md §9).
 * Built on the client's public API only: a message goes through the durable outbox, a turn
 * is followed by the client (one network stream per turn across tabs), and the streams
 * handed to `useChat` replay each turn from its first chunk.
 */
import type { ChatTransport, UIMessage } from 'ai';
import type { LifelineClient, TurnSnapshot } from '../types.js';
import { createDeliveredMarks } from './delivered.js';
import { conversationMessages, resumable } from './messages.js';
import { isLive, listedOrder, serverOrdered, unanswered, unlessAborted } from './newest-turn.js';
import { continuationKey } from './continuation.js';
import { continuedBy, continuedPrefix } from './continued-replay.js';
import { plainHeaders, requestContext } from './request-data.js';
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
  const listTimeoutMs = options.listTimeoutMs ?? 3000;
  const turnsOf = (chatId: string): TurnSnapshot[] => client.turns.getSnapshot().filter((turn) => turn.conversationId === chatId);

  /** The chat's newest turn by the server's order (W1: never by a local time or a random id). */
  async function newest(chatId: string, signal: AbortSignal | undefined): Promise<TurnSnapshot | undefined> {
    const order = await listedOrder(client, chatId, listTimeoutMs, report, signal);
    return signal?.aborted ? undefined : serverOrdered(turnsOf(chatId), order).at(-1);
  }

  /**
   * The turn a reload resumes: the chat's newest, when it is live or ended unseen here (a
   * failed one always, so its error shows again), or the one its last message, still on its
   * way, starts. Never a cancelled or stopped turn: a Stop on any device is final.
   */
  async function resumeTarget(chatId: string, signal: AbortSignal | undefined): Promise<string | undefined> {
    await unlessAborted(client.conversation(chatId).ready, signal);
    if (signal?.aborted) return undefined;
    const sending = unanswered(client, chatId, signal);
    if (sending) return sending;
    const turn = await newest(chatId, signal);
    if (!turn || turn.status === 'cancelled') return undefined;
    // Marked: delivered to a finished stream, or stopped here (its end may not have come yet).
    return turn.status === 'failed' || marks.get(chatId) !== turn.id ? turn.id : undefined;
  }

  return {
    resumeStreamIsReplay: true,

    sendMessages({ chatId, messages, abortSignal, body, metadata, headers }) {
      const last = messages.at(-1);
      // An assistant message last holds the answers to its tool calls: a continuation (§9).
      const continued = last?.role === 'assistant' ? last : undefined;
      // Else the newest user message (a regenerate sends it again, under a new key).
      const message = continued ?? messages.findLast((candidate) => candidate.role === 'user');
      if (!message) return Promise.reject(new TypeError('sendMessages needs a user message, or an assistant message last.'));
      const context = requestContext(body, metadata);
      const send = { ...(continued && { operationId: continuationKey(continued) }), ...(context && { context }), ...(headers && { headers: plainHeaders(headers) }) };
      return Promise.resolve(sendStream(client, chatId, message, { abortSignal, marks, report, send, messageId: continued?.id }));
    },

    async reconnectToStream({ chatId, abortSignal }) {
      // H5: the lookup honours the abort; useChat aborts a resume that another one replaces (StrictMode).
      const turnId = await resumeTarget(chatId, abortSignal);
      if (!turnId || abortSignal?.aborted) return null;
      const turn = client.turn(turnId);
      // A continuation replays the whole message it continues, earlier turns first (§9).
      const messageId = continuedBy(client.conversation(chatId).getSnapshot().items, turnId);
      const prefix = messageId === undefined ? undefined : await continuedPrefix(client, chatId, turnId, abortSignal);
      if (abortSignal?.aborted) return null;
      // Its abort only detaches: the turn goes on.
      return turnStream(turn, { signal: abortSignal, messageId, prefix, onFinished: () => marks.set(chatId, turnId) });
    },

    async cancel(chatId) {
      await client.conversation(chatId).ready;
      const turn = await newest(chatId, undefined);
      if (!turn || !isLive(turn)) return;
      // Stopped here: never resumed on this device, even before its end arrives.
      marks.set(chatId, turn.id);
      await client.turn(turn.id).cancel();
    },

    async loadMessages(chatId) {
      const conversation = client.conversation(chatId);
      await conversation.ready;
      const order = await listedOrder(client, chatId, listTimeoutMs, report);
      const messages = conversationMessages(conversation.getSnapshot().items, order);
      // The newest turn, when not delivered yet, is what the next reconnectToStream replays.
      return marks.get(chatId) === messages.at(-1)?.id ? messages : resumable(messages);
    },
  };
}
