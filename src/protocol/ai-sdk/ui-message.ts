/**
 * Folds a chunk stream into the assistant `UIMessage` it describes, the way the AI SDK's
 * `readUIMessageStream` does for its final state, without its code in the client bundle
 * (`loadMessages` and the server's history need it). Differences, none visible once a turn
 * is complete: a tool input still streaming is parsed only when it is whole JSON (the AI
 * SDK repairs partial JSON), and chunk types this fold does not know are skipped.
 */
import type { UIMessage, UIMessageChunk } from 'ai';

type Part = Record<string, unknown> & { type: string };
type Chunk = Record<string, unknown> & { type: string };

const outputStates = ['output-available', 'output-error'];

function merge(base: unknown, over: unknown): unknown {
  if (!isObject(over) || !isObject(base)) return over === undefined ? base : over;
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) if (value !== undefined) result[key] = merge(result[key], value);
  return result;
}
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function parseInput(text: string, encoding: unknown): unknown {
  if (encoding === 'text') return text;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The message being built, and its parts that later chunks still extend. */
interface Fold {
  message: UIMessage & { metadata?: unknown };
  parts: Part[];
  /** Open text and reasoning parts by chunk id; the end of a step closes them all. */
  texts: Map<unknown, Part>;
  reasonings: Map<unknown, Part>;
  /** Tool inputs streamed so far, by call id. */
  inputs: Map<unknown, { text: string; encoding: unknown }>;
}

/**
 * The message `chunks` build, with id `id` (a `start` chunk's `messageId` wins). Given
 * `base` (the assistant message a continuation continues, docs/protocol.md §9), the chunks
 * extend a copy of it, as `useChat` extends the last assistant message.
 *
 * @example
 * const message = buildUIMessage('turn_1', [{ type: 'start' }, { type: 'text-start', id: 't' }, …]);
 */
export function buildUIMessage(id: string, chunks: Iterable<UIMessageChunk>, base?: UIMessage): UIMessage {
  const message: Fold['message'] = base ? { ...structuredClone(base), id, role: 'assistant' } : { id, role: 'assistant', parts: [] };
  const fold: Fold = { message, parts: message.parts as unknown as Part[], texts: new Map(), reasonings: new Map(), inputs: new Map() };
  for (const chunk of chunks as Iterable<Chunk>) foldChunk(fold, chunk);
  return message;
}

function foldChunk(fold: Fold, chunk: Chunk): void {
  switch (chunk.type) {
    case 'text-start':
    case 'reasoning-start':
    case 'text-delta':
    case 'reasoning-delta':
    case 'text-end':
    case 'reasoning-end':
      return foldText(fold, chunk);
    case 'file':
    case 'source-url':
    case 'source-document':
      return foldSource(fold, chunk);
    case 'tool-input-start':
    case 'tool-input-delta':
    case 'tool-input-available':
    case 'tool-input-error':
      return foldToolInput(fold, chunk);
    case 'tool-approval-request':
    case 'tool-output-denied':
    case 'tool-output-available':
    case 'tool-output-error':
      return foldToolOutcome(fold, chunk);
    case 'start-step':
      fold.parts.push({ type: 'step-start' });
      return;
    case 'finish-step':
      fold.texts.clear();
      fold.reasonings.clear();
      return;
    case 'start':
    case 'finish':
    case 'message-metadata':
      if (chunk.type === 'start' && typeof chunk['messageId'] === 'string') fold.message.id = chunk['messageId'];
      if (chunk['messageMetadata'] != null) fold.message.metadata = merge(fold.message.metadata, chunk['messageMetadata']);
      return;
    default:
      return foldData(fold, chunk);
  }
}

/** A text or reasoning part: opened by its start chunk, extended by deltas, closed by its end chunk. */
function foldText(fold: Fold, chunk: Chunk): void {
  const key = chunk['id'];
  const reasoning = chunk.type.startsWith('reasoning');
  const open = reasoning ? fold.reasonings : fold.texts;
  if (chunk.type.endsWith('start')) {
    const part: Part = { type: reasoning ? 'reasoning' : 'text', ...(reasoning && { id: key }), text: '', providerMetadata: chunk['providerMetadata'], state: 'streaming' };
    open.set(key, part);
    fold.parts.push(part);
    return;
  }
  const part = open.get(key);
  if (!part) return;
  if (chunk.type.endsWith('delta')) part['text'] += String(chunk['delta']);
  else {
    part['state'] = 'done';
    open.delete(key);
  }
  part['providerMetadata'] = chunk['providerMetadata'] ?? part['providerMetadata'];
}

/** Files and sources: one whole part per chunk. */
function foldSource(fold: Fold, chunk: Chunk): void {
  if (chunk.type === 'file') {
    fold.parts.push({ type: 'file', mediaType: chunk['mediaType'], url: chunk['url'], ...(chunk['providerMetadata'] != null && { providerMetadata: chunk['providerMetadata'] }) });
    return;
  }
  const { type, sourceId, providerMetadata, ...rest } = chunk;
  fold.parts.push({ type, sourceId, ...(type === 'source-url' ? { url: rest['url'], title: rest['title'] } : { mediaType: rest['mediaType'], title: rest['title'], filename: rest['filename'] }), providerMetadata });
}

/** App data: a chunk with the id of an earlier one replaces its data; transient data is never kept. */
function foldData(fold: Fold, chunk: Chunk): void {
  if (!chunk.type.startsWith('data-') || chunk['transient'] === true) return;
  const key = chunk['id'];
  const existing = key == null ? undefined : fold.parts.find((part) => part.type === chunk.type && part['id'] === key);
  if (existing) existing['data'] = chunk['data'];
  else fold.parts.push(chunk);
}

const isTool = (part: Part): boolean => part.type.startsWith('tool-') || part.type === 'dynamic-tool';

/** The call's part in the current step (after the last `step-start`). */
function findStepTool(fold: Fold, callId: unknown): Part | undefined {
  return fold.parts.slice(fold.parts.findLastIndex((part) => part.type === 'step-start') + 1).find((part) => isTool(part) && part['toolCallId'] === callId);
}

/** The call's part in the current step, else its latest anywhere. */
function findTool(fold: Fold, callId: unknown): Part | undefined {
  return findStepTool(fold, callId) ?? fold.parts.findLast((part) => isTool(part) && part['toolCallId'] === callId);
}

/** The optional display fields a tool chunk may carry. */
const titleAndMetadata = (chunk: Chunk): Record<string, unknown> => ({
  ...(chunk['title'] !== undefined && { title: chunk['title'] }),
  ...(chunk['toolMetadata'] !== undefined && { toolMetadata: chunk['toolMetadata'] }),
});

/** Sets a tool call's state (as the AI SDK's updateToolPart does: every field given, undefined clears). */
function setTool(fold: Fold, chunk: Chunk, state: string, fields: Record<string, unknown>, existing = findTool(fold, chunk['toolCallId'])): void {
  const dynamic = existing ? existing.type === 'dynamic-tool' : chunk['dynamic'] === true;
  const name = fields['toolName'] as string;
  const metadata = chunk['providerMetadata'];
  const part: Part = existing ?? { type: '', toolCallId: chunk['toolCallId'] };
  Object.assign(part, { type: dynamic ? 'dynamic-tool' : `tool-${name}`, state, input: undefined, output: undefined, errorText: undefined, rawInput: undefined, preliminary: undefined, ...fields });
  if (!dynamic) delete part['toolName'];
  if (part['inputEncoding'] == null) delete part['inputEncoding'];
  for (const key of ['title', 'toolMetadata']) if (part[key] === undefined && existing === undefined) delete part[key];
  part['providerExecuted'] = chunk['providerExecuted'] ?? existing?.['providerExecuted'];
  if (metadata != null) part[outputStates.includes(state) ? 'resultProviderMetadata' : 'callProviderMetadata'] = metadata;
  if (!existing) fold.parts.push(part);
}

/** A tool call's input: streamed (kept raw, parsed when whole), then available, or refused. */
function foldToolInput(fold: Fold, chunk: Chunk): void {
  const call = chunk['toolCallId'];
  switch (chunk.type) {
    case 'tool-input-start':
      fold.inputs.set(call, { text: '', encoding: chunk['inputEncoding'] });
      return setTool(fold, chunk, 'input-streaming', { toolName: chunk['toolName'], inputEncoding: chunk['inputEncoding'], ...titleAndMetadata(chunk) }, findStepTool(fold, call));
    case 'tool-input-delta': {
      const input = fold.inputs.get(call);
      const existing = findTool(fold, call);
      if (!input || !existing) return;
      input.text += String(chunk['inputTextDelta']);
      const toolName = existing['toolName'] ?? existing.type.slice(5);
      return setTool(fold, { toolCallId: call, type: '' }, 'input-streaming', { toolName, inputEncoding: input.encoding, input: parseInput(input.text, input.encoding), rawInput: input.text }, existing);
    }
    case 'tool-input-available':
      return setTool(fold, chunk, 'input-available', { toolName: chunk['toolName'], input: chunk['input'], ...titleAndMetadata(chunk) }, findStepTool(fold, call));
    default: {
      const existing = findStepTool(fold, call);
      const dynamic = existing ? existing.type === 'dynamic-tool' : chunk['dynamic'] === true;
      const input = dynamic ? { input: chunk['input'] } : { rawInput: chunk['input'] };
      return setTool(fold, chunk, 'output-error', { toolName: chunk['toolName'], errorText: chunk['errorText'], ...input, ...(chunk['toolMetadata'] !== undefined && { toolMetadata: chunk['toolMetadata'] }) }, existing);
    }
  }
}

/** What became of a call whose input is known: an approval asked, a denial, its output or its error. */
function foldToolOutcome(fold: Fold, chunk: Chunk): void {
  const existing = findTool(fold, chunk['toolCallId']);
  if (!existing) return;
  if (chunk.type === 'tool-output-denied') existing['state'] = 'output-denied';
  else if (chunk.type === 'tool-approval-request') {
    existing['state'] = 'approval-requested';
    existing['approval'] = {
      id: chunk['approvalId'],
      ...(chunk['approvalDescriptor'] != null && { descriptor: chunk['approvalDescriptor'] }),
      ...('inputSchemaInput' in chunk && { inputSchemaInput: chunk['inputSchemaInput'] }),
      ...(chunk['signature'] != null && { signature: chunk['signature'] }),
    };
  } else {
    const available = chunk.type === 'tool-output-available';
    setTool(
      fold,
      chunk,
      available ? 'output-available' : 'output-error',
      {
        toolName: existing['toolName'] ?? existing.type.slice(5),
        input: existing['input'],
        ...(available ? { output: chunk['output'], preliminary: chunk['preliminary'] } : { errorText: chunk['errorText'] }),
        ...(!available && existing.type !== 'dynamic-tool' && { rawInput: existing['rawInput'] }),
        title: existing['title'],
        toolMetadata: chunk['toolMetadata'] ?? existing['toolMetadata'],
      },
      existing,
    );
  }
}
