/**
 * The conversation a `uiMessageAgent` turn sees, as AI SDK `UIMessage`s, rebuilt from the
 * turn log the way `useChat` holds it (docs/protocol.md §9): each turn is its user message
 * and its answer; a continuation turn extends the assistant message it continues, in place;
 * a user message sent again (regenerate, or an edit) replaces itself and everything after it.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { createChunkReplayer } from '../../protocol/ai-sdk/mapping.js';
import { buildUIMessage } from '../../protocol/ai-sdk/ui-message.js';
import { userMessage } from '../../protocol/ai-sdk/user-message.js';
import { continuedMessageId, type MessageContent } from '../../protocol/schemas.js';
import type { ConversationReader } from '../producer/agent.js';
import type { StoredTurn } from '../log/turn-log.js';

/** Events of a turn per read of the log while rebuilding history. */
const PAGE = 1000;

/** The message a submission stands for: the user message, or the assistant message a continuation answers. */
export function submittedMessage(content: MessageContent, messageId: string): UIMessage {
  return continuedMessageId(content) === undefined ? userMessage(content, messageId) : (content as unknown as UIMessage);
}

/** The chunks a logged turn holds, the `start` chunk carrying `messageId`. */
async function turnChunks(reader: ConversationReader, turn: StoredTurn, messageId: string): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  const replayer = createChunkReplayer(turn.id, (chunk) => chunks.push(chunk), messageId);
  for (let after = 0, more = true; more; ) {
    const page = await reader.read(turn.id, after, PAGE);
    for (const event of page.events) {
      if (event.type === 'delta') replayer.delta(event);
      else if (event.type === 'part') replayer.part(event.part);
      // Only an ending that says something: a complete turn needs no `finish` to read right.
      else if (event.type === 'turn.end' && event.status !== 'complete') replayer.end(event);
    }
    after = page.events.at(-1)?.seq ?? after;
    more = page.hasMore && page.events.length > 0;
  }
  return chunks;
}

/**
 * Ends `messages` (in place) with `message`, as `useChat` sends it: a message already there
 * (the assistant message a continuation answers; a user message sent again to regenerate or
 * edit it) replaces itself and drops everything after it; a new one is appended.
 */
export function placeMessage(messages: UIMessage[], message: UIMessage): void {
  const at = messages.findIndex((other) => other.id === message.id && other.role === message.role);
  if (at >= 0) messages.length = at;
  messages.push(message);
}

/** The conversation before the turn `reader` belongs to: at most `limit` earlier turns, oldest first. */
export async function readConversation(reader: ConversationReader, limit: number): Promise<UIMessage[]> {
  const turns = (await reader.turns(limit)).reverse();
  const messages: UIMessage[] = [];
  for (const turn of turns) {
    const continues = turn.continues ?? continuedMessageId(turn.content);
    if (continues !== undefined) {
      // A continuation of a message no longer in the conversation (regenerated away) is left out.
      const at = messages.findIndex((message) => message.id === continues && message.role === 'assistant');
      if (at >= 0) messages[at] = buildUIMessage(continues, await turnChunks(reader, turn, continues), turn.content as unknown as UIMessage);
      continue;
    }
    placeMessage(messages, userMessage(turn.content, turn.messageId));
    const answer = buildUIMessage(turn.id, await turnChunks(reader, turn, turn.id));
    if (answer.parts.length) messages.push(answer);
  }
  return messages;
}
