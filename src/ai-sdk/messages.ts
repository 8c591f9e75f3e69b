/**
 * A conversation as `UIMessage`s for `useChat`'s initial `messages`: each turn's user
 * message (the `UIMessage` the transport sent, kept with the turn or read from the
 * server's turn object) and its assistant message, folded from its parts, continuations
 * folded into the message they continue.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { continuedMessageId, type MessageContent } from '../protocol/schemas.js';
import type { ConversationItem, TurnSnapshot } from '../types.js';
import { createChunkReplayer } from '../protocol/ai-sdk/mapping.js';
import { placeMessage } from '../protocol/ai-sdk/place-message.js';
import { buildUIMessage } from '../protocol/ai-sdk/ui-message.js';
import { userMessage } from '../protocol/ai-sdk/user-message.js';

/** A turn's chunks so far (its snapshot's parts, no ending), the `start` chunk carrying `messageId`. */
export function turnChunks(turn: TurnSnapshot, messageId = turn.id): UIMessageChunk[] {
  const chunks: UIMessageChunk[] = [];
  createChunkReplayer(turn.id, (chunk) => chunks.push(chunk), messageId).parts(turn.parts);
  return chunks;
}

/** The assistant message a turn shows so far; `undefined` while it has nothing. */
export function assistantMessage(turn: TurnSnapshot): UIMessage | undefined {
  const message = buildUIMessage(turn.id, turnChunks(turn));
  return message.parts.length ? message : undefined;
}

/** One submission and the turn it started, if any, with where it sorts. */
interface Pair {
  content?: MessageContent;
  key?: string;
  turn?: TurnSnapshot;
  at: [number, number];
}

/**
 * The messages of a conversation's items, turns in `order` (turn ids, oldest first) where it
 * names them, folded the way `useChat` holds them (docs/protocol.md §9): a continuation extends
 * the assistant message it continues, in place (a tool call still waiting stays waiting; one
 * answered but not accepted yet shows its answer); a user message sent again (regenerate, an
 * edit) replaces itself and everything after it.
 */
export function conversationMessages(items: readonly ConversationItem[], order: readonly string[] = []): UIMessage[] {
  const rank = new Map(order.map((id, i) => [id, i]));
  // Sort keys: turns the server did not list keep their local place before the listed
  // ones (in the server's order), and messages not yet answered come last.
  const pairs: Pair[] = [];
  let sent: Omit<Pair, 'at'> | undefined;
  items.forEach((item, i) => {
    if (item.role === 'user') {
      if (sent) pairs.push({ ...sent, at: [2, i] });
      const content = item.content ?? item.submission?.content;
      sent = content === undefined ? undefined : { content, key: item.key };
    } else if (item.turn) {
      const listed = rank.get(item.turn.id);
      pairs.push({ ...sent, turn: item.turn, at: listed === undefined ? [0, i] : [1, listed] });
      sent = undefined;
    }
  });
  if (sent) pairs.push({ ...sent, at: [2, items.length] });
  pairs.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
  const messages: UIMessage[] = [];
  for (const { content, key, turn } of pairs) {
    const continues = content === undefined ? undefined : continuedMessageId(content);
    if (continues !== undefined) {
      // A continuation of a message no longer shown (regenerated away) is left out.
      const at = messages.findIndex((message) => message.id === continues && message.role === 'assistant');
      const base = content as unknown as UIMessage;
      if (at >= 0) messages[at] = turn ? buildUIMessage(continues, turnChunks(turn, continues), base) : base;
      continue;
    }
    if (content !== undefined) placeMessage(messages, userMessage(content, key!));
    const answer = turn && assistantMessage(turn);
    if (answer) messages.push(answer);
  }
  return messages;
}

const streamingToolInput = (part: UIMessage['parts'][number]): boolean =>
  (part.type.startsWith('tool-') || part.type === 'dynamic-tool') && 'state' in part && part.state === 'input-streaming';

/**
 * `messages` fit for a resume that replays their last (assistant) message from its first
 * chunk. useChat continues into the last message, instead of replacing it, when that
 * message holds a tool call whose input is still streaming (its path for transports that
 * send only the rest; `@ai-sdk/react`'s hook does not pass `resumeStreamIsReplay` on), and
 * the replay would then add every part a second time. Such a part is left out here: the
 * replay brings it back at once.
 */
export function resumable(messages: UIMessage[]): UIMessage[] {
  const last = messages.at(-1);
  if (last?.role !== 'assistant' || !last.parts.some(streamingToolInput)) return messages;
  const parts = last.parts.filter((part) => !streamingToolInput(part));
  return [...messages.slice(0, -1), ...(parts.length ? [{ ...last, parts }] : [])];
}
