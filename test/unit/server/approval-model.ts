/**
 * A tool that needs approval, and the AI SDK's mock model asking for it (no network, no
 * keys): a question starting "Transfer" calls `transfer`, one starting "Where" calls the
 * client-side `locate`; once the prompt ends with the tool's result (or its denial), the
 * model answers in text, as it does anything else. Run through the real `streamText`.
 */
import { convertToModelMessages, jsonSchema, simulateReadableStream, stepCountIs, streamText, tool, type ToolSet, type UIMessage, type UIMessageChunk } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

type StreamPart = Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};

function text(words: string): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'text-1' },
    ...words.split(/(?<= )/u).map((delta) => ({ type: 'text-delta' as const, id: 'text-1', delta })),
    { type: 'text-end', id: 'text-1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ] as StreamPart[];
}

const toolCall = (toolName: string, input: unknown): StreamPart[] =>
  [
    { type: 'stream-start', warnings: [] },
    { type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
  ] as StreamPart[];

/** The answer once the prompt ends with a tool's outcome: what the tool said, or its denial. */
function afterTool(output: { type: string; value?: unknown }): StreamPart[] {
  if (output.type === 'execution-denied') return text('I did not send it.');
  const value = output.value as { sent?: number; city?: string } | undefined;
  return text(value?.city !== undefined ? `You are in ${value.city}.` : 'Sent 5 to Bob.');
}

function approvalModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1);
      const result = last?.role === 'tool' ? last.content.find((part) => part.type === 'tool-result') : undefined;
      const question = last?.role === 'user' ? last.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
      const chunks = question.startsWith('Transfer')
        ? toolCall('transfer', { amount: 5, to: 'Bob' })
        : question.startsWith('Where')
          ? toolCall('locate', {})
          : result?.type === 'tool-result'
            ? afterTool(result.output as { type: string; value?: unknown })
            : text('Hello.');
      return { stream: simulateReadableStream<StreamPart>({ chunks, initialDelayInMs: 0, chunkDelayInMs: 0 }) };
    },
  });
}

/** `transfer`, which needs approval (`onExecute` counts its runs), and `locate`, a client-side tool (no `execute`). */
export function approvalTools(onExecute: () => void): ToolSet {
  return {
    locate: tool({ description: 'Where the user is: answered by the browser.', inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }) }),
    transfer: tool({
      description: 'Sends money.',
      inputSchema: jsonSchema<{ amount: number; to: string }>({ type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } }, required: ['amount', 'to'] }),
      needsApproval: true,
      execute: async ({ amount }) => {
        onExecute();
        return { sent: amount };
      },
    }),
  };
}

/** `streamText` over the approval model, as a UI message chunk stream. */
export async function streamApproval(messages: UIMessage[], tools: ToolSet, signal: AbortSignal): Promise<ReadableStream<UIMessageChunk>> {
  return streamText({ model: approvalModel(), messages: await convertToModelMessages(messages), tools, stopWhen: stepCountIs(3), abortSignal: signal }).toUIMessageStream();
}
