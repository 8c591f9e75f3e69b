/**
 * What a stream of a continuation turn needs (docs/protocol.md §9): the id of the message it
 * continues (its `start` carries it), and for a resume the whole of that message before the
 * turn's own chunks. `useChat` rebuilds a resumed message from the replayed stream alone, so
 * the replay sends the earlier turns' chunks and, between them, the answers each continuation
 * submitted (a client tool's output, error or denial) as the chunks that set them.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { buildUIMessage } from '../protocol/ai-sdk/ui-message.js';
import { continuedMessageId, type MessageContent } from '../protocol/schemas.js';
import type { ConversationItem, LifelineClient, TurnSnapshot } from '../types.js';
import { turnChunks } from './messages.js';
import { unlessAborted } from './newest-turn.js';

type ToolPart = Record<string, unknown> & { type: string; toolCallId?: unknown; state?: unknown };

/** Each turn's submitted content, by turn id (the user item right before its turn). */
function contents(items: readonly ConversationItem[]): Map<string, MessageContent> {
  const found = new Map<string, MessageContent>();
  items.forEach((item, i) => {
    const before = items[i - 1];
    const content = before?.role === 'user' ? (before.content ?? before.submission?.content) : undefined;
    if (item.turn && content !== undefined) found.set(item.turn.id, content);
  });
  return found;
}

/** The id of the message turn `turnId` continues; `undefined` for a turn that answers a user message. */
export function continuedBy(items: readonly ConversationItem[], turnId: string): string | undefined {
  const content = contents(items).get(turnId);
  return content === undefined ? undefined : continuedMessageId(content);
}

/**
 * The chunks that give `sofar` the answers `submitted` holds and it lacks: an output, an
 * error, a denial. An approval decision has no chunk of its own in the AI SDK's stream: the
 * continuation's own chunks (the tool's output, or its denial) show what came of it.
 */
export function answerChunks(submitted: UIMessage, sofar: UIMessage): UIMessageChunk[] {
  const known = new Map((sofar.parts as ToolPart[]).filter((part) => part.toolCallId !== undefined).map((part) => [part.toolCallId, part.state]));
  const chunks: Record<string, unknown>[] = [];
  for (const part of submitted.parts as ToolPart[]) {
    const { toolCallId, state } = part;
    if (toolCallId === undefined || known.get(toolCallId) === state || part['providerExecuted'] === true) continue;
    if (state === 'output-available') chunks.push({ type: 'tool-output-available', toolCallId, output: part['output'] });
    else if (state === 'output-error') chunks.push({ type: 'tool-output-error', toolCallId, errorText: part['errorText'] });
    else if (state === 'output-denied') chunks.push({ type: 'tool-output-denied', toolCallId });
  }
  return chunks as unknown as UIMessageChunk[];
}

const settled = (client: LifelineClient, turnId: string, signal: AbortSignal | undefined): Promise<TurnSnapshot | undefined> =>
  unlessAborted(client.turn(turnId).completed, signal);

/**
 * The chunks a resume of continuation turn `turnId` sends before the turn's own: the turn
 * that started the message, then each earlier continuation of it, each continuation's answers
 * before its chunks; no `finish` in between (one message). `undefined` for a turn that is no
 * continuation, when the turn that started the message is not known here, or on abort.
 */
export async function continuedPrefix(client: LifelineClient, chatId: string, turnId: string, signal?: AbortSignal): Promise<UIMessageChunk[] | undefined> {
  const items = client.conversation(chatId).getSnapshot().items;
  const submitted = contents(items);
  const messageId = continuedBy(items, turnId);
  if (messageId === undefined || !items.some((item) => item.turn?.id === messageId)) return undefined;
  const at = items.findIndex((item) => item.turn?.id === turnId);
  const earlier = items.slice(0, at).flatMap((item) => (item.turn && continuedBy(items, item.turn.id) === messageId ? [item.turn.id] : []));
  const chunks: UIMessageChunk[] = [];
  const add = (more: UIMessageChunk[]): void => void chunks.push(...more.filter((chunk) => chunk.type !== 'finish' && (chunk.type !== 'start' || !chunks.length)));
  for (const id of [messageId, ...earlier]) {
    const content = submitted.get(id);
    if (id !== messageId && content !== undefined) add(answerChunks(content as unknown as UIMessage, buildUIMessage(messageId, chunks)));
    // Earlier turns have ended; on a new device their events may still be on their way.
    const snapshot = await settled(client, id, signal);
    if (!snapshot) return undefined;
    add(turnChunks(snapshot, messageId));
  }
  const own = submitted.get(turnId);
  if (own !== undefined) add(answerChunks(own as unknown as UIMessage, buildUIMessage(messageId, chunks)));
  return chunks;
}
