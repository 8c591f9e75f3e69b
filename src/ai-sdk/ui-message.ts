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

/**
 * The message `chunks` build, with id `id` (a `start` chunk's `messageId` wins).
 *
 * @example
 * const message = buildUIMessage('turn_1', [{ type: 'start' }, { type: 'text-start', id: 't' }, …]);
 */
export function buildUIMessage(id: string, chunks: Iterable<UIMessageChunk>): UIMessage {
  const message: UIMessage & { metadata?: unknown } = { id, role: 'assistant', parts: [] };
  const parts = message.parts as unknown as Part[];
  const texts = new Map<unknown, Part>();
  const reasonings = new Map<unknown, Part>();
  const inputs = new Map<unknown, { text: string; encoding: unknown }>();
  const stepParts = (): Part[] => parts.slice(parts.findLastIndex((part) => part.type === 'step-start') + 1);
  const isTool = (part: Part): boolean => part.type.startsWith('tool-') || part.type === 'dynamic-tool';
  const findTool = (callId: unknown): Part | undefined =>
    stepParts().find((part) => isTool(part) && part['toolCallId'] === callId) ?? parts.findLast((part) => isTool(part) && part['toolCallId'] === callId);

  /** Sets a tool call's state (as the AI SDK's updateToolPart does: every field given, undefined clears). */
  function tool(chunk: Chunk, state: string, fields: Record<string, unknown>, existing = findTool(chunk['toolCallId'])): void {
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
    if (!existing) parts.push(part);
  }
  const known = (chunk: Chunk): Record<string, unknown> => ({
    ...(chunk['title'] !== undefined && { title: chunk['title'] }),
    ...(chunk['toolMetadata'] !== undefined && { toolMetadata: chunk['toolMetadata'] }),
  });

  for (const chunk of chunks as Iterable<Chunk>) {
    const key = chunk['id'];
    const call = chunk['toolCallId'];
    switch (chunk.type) {
      case 'text-start':
      case 'reasoning-start': {
        const reasoning = chunk.type === 'reasoning-start';
        const part: Part = { type: reasoning ? 'reasoning' : 'text', ...(reasoning && { id: key }), text: '', providerMetadata: chunk['providerMetadata'], state: 'streaming' };
        (reasoning ? reasonings : texts).set(key, part);
        parts.push(part);
        break;
      }
      case 'text-delta':
      case 'reasoning-delta':
      case 'text-end':
      case 'reasoning-end': {
        const open = (chunk.type.startsWith('text') ? texts : reasonings).get(key);
        if (!open) break;
        if (chunk.type.endsWith('delta')) open['text'] += String(chunk['delta']);
        else {
          open['state'] = 'done';
          (chunk.type.startsWith('text') ? texts : reasonings).delete(key);
        }
        open['providerMetadata'] = chunk['providerMetadata'] ?? open['providerMetadata'];
        break;
      }
      case 'file':
        parts.push({ type: 'file', mediaType: chunk['mediaType'], url: chunk['url'], ...(chunk['providerMetadata'] != null && { providerMetadata: chunk['providerMetadata'] }) });
        break;
      case 'source-url':
      case 'source-document': {
        const { type, sourceId, providerMetadata, ...rest } = chunk;
        parts.push({ type, sourceId, ...(type === 'source-url' ? { url: rest['url'], title: rest['title'] } : { mediaType: rest['mediaType'], title: rest['title'], filename: rest['filename'] }), providerMetadata });
        break;
      }
      case 'tool-input-start':
        inputs.set(call, { text: '', encoding: chunk['inputEncoding'] });
        tool(chunk, 'input-streaming', { toolName: chunk['toolName'], inputEncoding: chunk['inputEncoding'], ...known(chunk) }, stepParts().find((part) => isTool(part) && part['toolCallId'] === call));
        break;
      case 'tool-input-delta': {
        const input = inputs.get(call);
        const existing = findTool(call);
        if (!input || !existing) break;
        input.text += String(chunk['inputTextDelta']);
        const toolName = existing['toolName'] ?? existing.type.slice(5);
        tool({ toolCallId: call, type: '' }, 'input-streaming', { toolName, inputEncoding: input.encoding, input: parseInput(input.text, input.encoding), rawInput: input.text }, existing);
        break;
      }
      case 'tool-input-available':
        tool(chunk, 'input-available', { toolName: chunk['toolName'], input: chunk['input'], ...known(chunk) }, stepParts().find((part) => isTool(part) && part['toolCallId'] === call));
        break;
      case 'tool-input-error': {
        const existing = stepParts().find((part) => isTool(part) && part['toolCallId'] === call);
        const dynamic = existing ? existing.type === 'dynamic-tool' : chunk['dynamic'] === true;
        tool(chunk, 'output-error', { toolName: chunk['toolName'], errorText: chunk['errorText'], ...(dynamic ? { input: chunk['input'] } : { rawInput: chunk['input'] }), ...(chunk['toolMetadata'] !== undefined && { toolMetadata: chunk['toolMetadata'] }) }, existing);
        break;
      }
      case 'tool-approval-request':
      case 'tool-output-denied': {
        const existing = findTool(call);
        if (!existing) break;
        if (chunk.type === 'tool-output-denied') existing['state'] = 'output-denied';
        else {
          existing['state'] = 'approval-requested';
          existing['approval'] = {
            id: chunk['approvalId'],
            ...(chunk['approvalDescriptor'] != null && { descriptor: chunk['approvalDescriptor'] }),
            ...('inputSchemaInput' in chunk && { inputSchemaInput: chunk['inputSchemaInput'] }),
            ...(chunk['signature'] != null && { signature: chunk['signature'] }),
          };
        }
        break;
      }
      case 'tool-output-available':
      case 'tool-output-error': {
        const existing = findTool(call);
        if (!existing) break;
        const available = chunk.type === 'tool-output-available';
        tool(
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
        break;
      }
      case 'start-step':
        parts.push({ type: 'step-start' });
        break;
      case 'finish-step':
        texts.clear();
        reasonings.clear();
        break;
      case 'start':
      case 'finish':
      case 'message-metadata':
        if (chunk.type === 'start' && typeof chunk['messageId'] === 'string') message.id = chunk['messageId'];
        if (chunk['messageMetadata'] != null) message.metadata = merge(message.metadata, chunk['messageMetadata']);
        break;
      default:
        if (chunk.type.startsWith('data-') && chunk['transient'] !== true) {
          const existing = key == null ? undefined : parts.find((part) => part.type === chunk.type && part['id'] === key);
          if (existing) existing['data'] = chunk['data'];
          else parts.push(chunk);
        }
    }
  }
  return message;
}
