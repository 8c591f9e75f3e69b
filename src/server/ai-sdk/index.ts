/**
 * `lifeline/server/ai-sdk`: runs an AI SDK `UIMessageChunk` stream (typically
 * `streamText(…).toUIMessageStream()`) as a Lifeline agent, logged per docs/protocol.md §9, so
 * the turn survives cuts, reloads and closed tabs and `useChat` can follow it through
 * `lifeline/ai-sdk`. Needs `ai` (5 to 7) only for its types.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { createChunkLogger, createChunkReplayer } from '../../protocol/ai-sdk/mapping.js';
import { buildUIMessage } from '../../protocol/ai-sdk/ui-message.js';
import { userMessage } from '../../protocol/ai-sdk/user-message.js';
import type { Agent, AgentContext, AgentEvent } from '../producer/agent.js';
import type { StoredTurn, TurnLog } from '../log/turn-log.js';

/** What a {@link UIMessageProducer} gets: the agent context plus the conversation as `UIMessage`s. */
export interface UIMessageAgentContext extends AgentContext {
  /** The new user message (the `UIMessage` the transport sent, or one made from plain content). */
  message: UIMessage;
  /** The conversation so far, oldest first, ending with `message`. */
  messages: UIMessage[];
}

/** A chunk stream, as `toUIMessageStream()` returns it, or any async iterable of chunks. */
export type UIMessageChunkSource = ReadableStream<UIMessageChunk> | AsyncIterable<UIMessageChunk>;

/** Produces the assistant message of one turn. Honour `context.signal` to stop generating on cancel. */
export type UIMessageProducer = (context: UIMessageAgentContext) => UIMessageChunkSource | Promise<UIMessageChunkSource>;

export interface UIMessageAgentOptions {
  /**
   * The handler's turn log: `messages` is rebuilt from it (each earlier turn's message and
   * its assistant message, from its events). Without it, and without `history`, `messages`
   * holds the new message only.
   */
  log?: TurnLog;
  /** Earlier turns read from `log`, newest kept. Default 100 (the list endpoint allows 200). */
  historyTurns?: number;
  /** The conversation before the new message, from the app's own database (replaces reading `log`). */
  history?: (context: AgentContext) => UIMessage[] | Promise<UIMessage[]>;
}

/** Events of a turn per read of the log while rebuilding history. */
const PAGE = 1000;

/** The assistant message a logged turn holds, or `undefined` when it holds nothing. */
async function assistantMessage(log: TurnLog, turn: StoredTurn): Promise<UIMessage | undefined> {
  const chunks: UIMessageChunk[] = [];
  const replayer = createChunkReplayer(turn.id, (chunk) => chunks.push(chunk));
  for (let after = 0, more = true; more; ) {
    const page = await log.read(turn.id, after, PAGE);
    for (const event of page.events) {
      if (event.type === 'delta') replayer.delta(event.text);
      else if (event.type === 'part') replayer.part(event.part);
      // Only an ending that says something: a complete turn needs no `finish` to read right.
      else if (event.type === 'turn.end' && event.status !== 'complete') replayer.end(event);
    }
    after = page.events.at(-1)?.seq ?? after;
    more = page.hasMore && page.events.length > 0;
  }
  const message = buildUIMessage(turn.id, chunks);
  return message.parts.length ? message : undefined;
}

/** The conversation before `context`'s turn, from the log: each turn's user message, then its answer. */
async function readHistory(log: TurnLog, context: AgentContext, message: UIMessage, limit: number): Promise<UIMessage[]> {
  const turns = (await log.listTurns(context.conversationId, context.principal, limit)).filter((turn) => turn.id !== context.turnId).reverse();
  const messages: UIMessage[] = [];
  for (const turn of turns) {
    const user = userMessage(turn.content, turn.messageId);
    // The same message sent again (regenerate) replaces its earlier answer.
    if (user.id === message.id) continue;
    messages.push(user);
    const answer = await assistantMessage(log, turn);
    if (answer) messages.push(answer);
  }
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
 * `text-delta` as deltas, every other chunk as a part, `start` with the turn id as
 * `messageId`; transient data chunks are not logged. The stream ending (after `finish`)
 * ends the turn `complete`; an `error` chunk or a throw ends it `failed`; a cancel ends it
 * `cancelled` and aborts `context.signal`. Generation goes on with no client connected.
 *
 * @example
 * const agent = uiMessageAgent(({ messages, signal }) =>
 *   streamText({ model, messages: convertToModelMessages(messages), abortSignal: signal }).toUIMessageStream(),
 * { log });
 * const handler = createLifelineHandler({ agent, store: log });
 */
export function uiMessageAgent(produce: UIMessageProducer, options: UIMessageAgentOptions = {}): Agent {
  return async function* (context): AsyncGenerator<AgentEvent> {
    const message = userMessage(context.content, context.messageId);
    const earlier = options.history ? await options.history(context) : options.log ? await readHistory(options.log, context, message, options.historyTurns ?? 100) : [];
    const log = createChunkLogger(context.turnId);
    for await (const chunk of chunksOf(await produce({ ...context, message, messages: [...earlier, message] }), context.signal)) {
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
