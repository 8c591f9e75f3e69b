/**
 * `lifeline-chat/server/ai-sdk`: runs an AI SDK `UIMessageChunk` stream (typically
 * `streamText(…).toUIMessageStream()`) as a Lifeline agent, logged per docs/protocol.md §9, so
 * the turn survives cuts, reloads and closed tabs and `useChat` can follow it through
 * `lifeline-chat/ai-sdk`. Needs `ai` (5 to 7) only for its types.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { createChunkLogger } from '../../protocol/ai-sdk/mapping.js';
import type { Agent, AgentContext, AgentEvent } from '../producer/agent.js';
import { conversationReader } from '../producer/conversation.js';
import type { TurnLog } from '../log/turn-log.js';
import { placeMessage, readConversation, submittedMessage } from './history.js';

/**
 * What a {@link UIMessageProducer} gets: the agent context (with the submission's `context`
 * and `headers`, for this turn only) plus the conversation as `UIMessage`s.
 */
export interface UIMessageAgentContext extends AgentContext {
  /**
   * The submitted message: the new user message (the `UIMessage` the transport sent, or one
   * made from plain content), or for a continuation the assistant message it answers, with
   * the client's tool outputs and approval responses (docs/protocol.md §9).
   */
  message: UIMessage;
  /**
   * The conversation, oldest first, ending with `message`: for a continuation, with the
   * assistant message it continues replaced by `message`; for a user message sent again
   * (regenerate), without its earlier answer.
   */
  messages: UIMessage[];
}

/** A chunk stream, as `toUIMessageStream()` returns it, or any async iterable of chunks. */
export type UIMessageChunkSource = ReadableStream<UIMessageChunk> | AsyncIterable<UIMessageChunk>;

/** Produces the assistant message of one turn. Honour `context.signal` to stop generating on cancel. */
export type UIMessageProducer = (context: UIMessageAgentContext) => UIMessageChunkSource | Promise<UIMessageChunkSource>;

export interface UIMessageAgentOptions {
  /**
   * A turn log to rebuild `messages` from instead of the handler's own (which the agent
   * reads by default: pass this only to read another store).
   */
  log?: TurnLog;
  /** Earlier turns read from the log, newest kept. Default 100 (the list endpoint allows 200). */
  historyTurns?: number;
  /** The conversation before the new message, from the app's own database (replaces reading the log). */
  history?: (context: AgentContext) => UIMessage[] | Promise<UIMessage[]>;
}

/** The conversation the turn answers, ending with its submitted message. */
async function conversationOf(context: AgentContext, message: UIMessage, options: UIMessageAgentOptions): Promise<UIMessage[]> {
  const messages = options.history
    ? [...(await options.history(context))]
    : await readConversation(options.log ? conversationReader(options.log, context) : context.conversation, options.historyTurns ?? 100);
  placeMessage(messages, message);
  return messages;
}

/**
 * The chunks of `source`, until it ends or `signal` aborts. A cancel stops the stream at
 * once, even while it waits for its next chunk (a generator's `return()` would wait for it).
 */
async function* chunksOf(source: UIMessageChunkSource, signal: AbortSignal): AsyncGenerator<UIMessageChunk> {
  // A ReadableStream is read by a reader even where it is async iterable: only a reader's cancel ends a pending read.
  const stream = 'getReader' in source;
  const reader = stream ? source.getReader() : undefined;
  const iterator = stream ? undefined : source[Symbol.asyncIterator]();
  const stop = (): void => {
    reader?.cancel().catch(() => undefined);
    iterator?.return?.().catch(() => undefined);
  };
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const next = iterator ? await iterator.next() : await reader!.read();
      if (next.done || signal.aborted) return;
      yield next.value;
    }
  } finally {
    signal.removeEventListener('abort', stop);
    // Stopped early (a refused chunk, an error chunk): the stream's producer stops too.
    stop();
  }
}

/** The reason an `error` (or unasked `abort`) chunk ends the turn `failed`. */
class UIMessageStreamFailed extends Error {}

/**
 * A Lifeline agent that logs the `UIMessageChunk`s `produce` returns (docs/protocol.md §9):
 * every `text-delta` as a delta (with its part id and metadata), every other chunk as a part,
 * `start` with the message id (the turn id, or the continued message's for a continuation);
 * transient data chunks are not logged. The stream ending (after `finish`) ends the turn
 * `complete`; an `error` chunk or a throw ends it `failed`; a cancel ends it `cancelled` and
 * aborts `context.signal`. Generation goes on with no client connected. The conversation is
 * read from the handler the agent is mounted in.
 *
 * A continuation (a tool approval or a client tool's output, §9) is one turn per answer, by its
 * idempotency key, so an approved tool's `execute` runs once per approved call; `streamText`
 * runs it from the approval in `messages`, and a denied one never.
 *
 * @example
 * const agent = uiMessageAgent(async ({ messages, context, headers, signal }) =>
 *   streamText({ model: pick(context), messages: await convertToModelMessages(messages), tools, abortSignal: signal }).toUIMessageStream(),
 * );
 * const handler = createLifelineHandler({ agent });
 */
export function uiMessageAgent(produce: UIMessageProducer, options: UIMessageAgentOptions = {}): Agent {
  return async function* (context): AsyncGenerator<AgentEvent> {
    const message = submittedMessage(context.content, context.messageId);
    const messages = await conversationOf(context, message, options);
    const log = createChunkLogger(context.continues ?? context.turnId);
    for await (const chunk of chunksOf(await produce({ ...context, message, messages }), context.signal)) {
      if (typeof chunk !== 'object' || chunk === null || typeof (chunk as { type?: unknown }).type !== 'string') {
        // The handler refuses it with a clear error and ends the turn failed.
        yield { type: 'part', part: chunk as never };
        return;
      }
      const event = log(chunk);
      if (event) yield event;
      if (chunk.type === 'error') throw new UIMessageStreamFailed(chunk.errorText);
      if (chunk.type === 'abort' && !context.signal.aborted) throw new UIMessageStreamFailed('The stream was aborted by its producer.');
    }
  };
}
