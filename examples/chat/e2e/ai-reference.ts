/**
 * The reference of the AI page's tool tests: the same conversation run the AI SDK's own way,
 * in the same test. A plain route answers `useChat`'s POST with the same tools model through
 * `streamText` (`pipeUIMessageStreamToResponse`), and the AI SDK's `DefaultChatTransport`
 * sends it each request the page made: every user message (with the page's per-request data),
 * every continuation (the reference's own message, answered the way the page answered it).
 * Its messages are folded as `useChat` folds them (`readUIMessageStream`).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DefaultChatTransport, pipeUIMessageStreamToResponse, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { CONTINUATION_REPEAT, TIER_HEADER } from '../ai-agent.js';
import { pageTools, requestNote, streamTools } from '../ai-tools-model.js';
import { REQUEST_DATA } from '../src/ai-request.js';
import type { ServerTurn } from './ai-oracle.js';

export interface PlainRoute {
  url: string;
  close(): Promise<void>;
}

async function jsonOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

/** A plain AI SDK route on a free loopback port: `{ messages, …body, metadata }` in, the UI message stream out. */
export async function startPlainRoute(): Promise<PlainRoute> {
  const server = createServer((request, response) => {
    void jsonOf(request).then(async ({ messages, id: _id, trigger: _trigger, messageId: _messageId, metadata, ...body }) => {
      // The request data as Lifeline hands it to its agent: `{ body, metadata }`, each when given.
      const given = Object.keys(body).length > 0 || metadata !== undefined;
      const context: unknown = given ? JSON.parse(JSON.stringify({ body: Object.keys(body).length > 0 ? body : undefined, metadata })) : undefined;
      const tier = request.headers[TIER_HEADER];
      const note = requestNote(context, typeof tier === 'string' ? tier : null);
      const stream = await streamTools(messages as UIMessage[], pageTools(), { note, repeat: CONTINUATION_REPEAT });
      pipeUIMessageStreamToResponse({ response, stream });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/chat`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

type ToolPart = Record<string, unknown> & { toolCallId?: string; approval?: Record<string, unknown> };

/** `mine` with the answers `theirs` holds for the same tool calls (an approval keeps `mine`'s own id). */
function withAnswers(mine: UIMessage, theirs: UIMessage): UIMessage {
  const answers = new Map((theirs.parts as ToolPart[]).filter((part) => part.toolCallId !== undefined).map((part) => [part.toolCallId, part]));
  const parts = (mine.parts as ToolPart[]).map((part) => {
    const answer = part.toolCallId === undefined ? undefined : answers.get(part.toolCallId);
    if (!answer) return part;
    const { approval, ...rest } = answer;
    return { ...part, ...rest, ...(approval && { approval: { ...approval, id: part.approval?.['id'] } }) };
  });
  return { ...mine, parts: parts as UIMessage['parts'] };
}

/** Folds `stream` as useChat does, onto `base` for a continuation; a new message takes `id`. */
async function fold(stream: ReadableStream<UIMessageChunk>, id: string, base: UIMessage | undefined): Promise<UIMessage | undefined> {
  const named = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, out) => out.enqueue(chunk.type === 'start' && !base ? { ...chunk, messageId: id } : chunk) }),
  );
  let last: UIMessage | undefined;
  try {
    for await (const message of readUIMessageStream({ stream: named, terminateOnError: true, ...(base && { message: structuredClone(base) }) })) last = structuredClone(message);
  } catch {
    // An error chunk: useChat stops reading there too, keeping what it has.
  }
  return last;
}

/**
 * The messages the AI SDK's own transport ends with for the requests behind `turns` (oldest
 * first, as the server lists them): each user message (a regenerate when it was sent before),
 * each continuation answered as the page answered it. Answers a regenerate replaced go to `replaced`.
 */
export async function referenceConversation(route: PlainRoute, turns: readonly ServerTurn[], replaced: UIMessage[] = []): Promise<UIMessage[]> {
  const transport = new DefaultChatTransport<UIMessage>({
    api: route.url,
    // An AI SDK app sends `metadata` in its body itself: the default request has no place for it.
    prepareSendMessagesRequest: ({ body, id, messages, trigger, messageId, requestMetadata }) => ({ body: { ...body, id, messages, trigger, messageId, metadata: requestMetadata } }),
  });
  const messages: UIMessage[] = [];
  for (const turn of turns) {
    const content = turn.content;
    const at = messages.findIndex((message) => message.id === content.id);
    if (content.role === 'user') {
      // Sent again (regenerate): its earlier answer goes, after the page showed it.
      if (at >= 0) replaced.push(...messages.splice(at).filter((message) => message.role === 'assistant'));
      messages.push(content);
      const stream = await transport.sendMessages({ chatId: 'reference', messages, trigger: at >= 0 ? 'regenerate-message' : 'submit-message', messageId: undefined, abortSignal: undefined, ...REQUEST_DATA });
      const answer = await fold(stream, turn.id, undefined);
      if (answer) messages.push(answer);
      continue;
    }
    const answered = withAnswers(messages[at]!, content);
    messages[at] = answered;
    const stream = await transport.sendMessages({ chatId: 'reference', messages, trigger: 'submit-message', messageId: answered.id, abortSignal: undefined });
    messages[at] = (await fold(stream, turn.id, answered)) ?? answered;
  }
  return messages;
}

/**
 * `messages` with every approval id replaced by its place (the AI SDK draws them at random);
 * with `decisions: false` also without the approval's decision (`approved`, `reason`), which no
 * chunk carries: a message useChat rebuilt from a resumed stream cannot hold it.
 */
export function withoutApprovalIds(messages: readonly UIMessage[], decisions = true): UIMessage[] {
  let n = 0;
  const approval = ({ approved, reason, ...rest }: Record<string, unknown>) => ({ ...rest, id: `approval-${++n}`, ...(decisions && { approved, reason }) });
  return messages.map((message) => ({
    ...message,
    parts: (message.parts as ToolPart[]).map((part) => (part.approval ? { ...part, approval: approval(part.approval) } : part)) as UIMessage['parts'],
  }));
}
