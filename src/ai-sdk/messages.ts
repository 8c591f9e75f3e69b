/**
 * A conversation as `UIMessage`s for `useChat`'s initial `messages`: each turn's user
 * message (the `UIMessage` the transport sent, kept with the turn or read from the
 * server's turn object) and its assistant message, folded from its parts.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import type { ConversationItem, TurnSnapshot } from '../types.js';
import { createChunkReplayer } from '../protocol/ai-sdk/mapping.js';
import { buildUIMessage } from '../protocol/ai-sdk/ui-message.js';
import { userMessage } from '../protocol/ai-sdk/user-message.js';

/** The assistant message a turn shows so far; `undefined` while it has nothing. */
export function assistantMessage(turn: TurnSnapshot): UIMessage | undefined {
  const chunks: UIMessageChunk[] = [];
  const replayer = createChunkReplayer(turn.id, (chunk) => chunks.push(chunk));
  replayer.parts(turn.parts);
  const message = buildUIMessage(turn.id, chunks);
  return message.parts.length ? message : undefined;
}

/**
 * The messages of a conversation's items, turns in `order` (turn ids, oldest first) where
 * it names them. A user message sent again (regenerate) keeps only its newest answer.
 */
export function conversationMessages(items: readonly ConversationItem[], order: readonly string[] = []): UIMessage[] {
  const rank = new Map(order.map((id, i) => [id, i]));
  // Sort keys: turns the server did not list keep their local place before the listed
  // ones (in the server's order), and messages not yet answered come last.
  const pairs: { user?: UIMessage; turn?: TurnSnapshot; at: [number, number] }[] = [];
  let user: UIMessage | undefined;
  items.forEach((item, i) => {
    if (item.role === 'user') {
      const content = item.content ?? item.submission?.content;
      if (user) pairs.push({ user, at: [2, i] });
      user = content === undefined ? undefined : userMessage(content, item.key);
    } else if (item.turn) {
      const listed = rank.get(item.turn.id);
      pairs.push({ ...(user && { user }), turn: item.turn, at: listed === undefined ? [0, i] : [1, listed] });
      user = undefined;
    }
  });
  if (user) pairs.push({ user, at: [2, items.length] });
  pairs.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
  const messages: UIMessage[] = [];
  const lastOf = new Map(pairs.map((pair, i) => [pair.user?.id, i]));
  pairs.forEach((pair, i) => {
    if (pair.user && lastOf.get(pair.user.id) !== i) return;
    if (pair.user) messages.push(pair.user);
    const answer = pair.turn && assistantMessage(pair.turn);
    if (answer) messages.push(answer);
  });
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
