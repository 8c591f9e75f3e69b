/**
 * The AI page's tools, over the AI SDK's own test model and the real `streamText` (no network,
 * no keys), deterministic so a test can run the same conversation through the AI SDK's own
 * transport as its reference. The one model of the example's tool turns and of the server
 * tests of continuations:
 *
 * - "Where am I?" calls `locate`, a client-side tool (no `execute`: the page answers it with
 *   `addToolOutput`), then says where the answer puts the user;
 * - "Transfer …" calls `transfer`, which needs approval (`needsApproval`); its `execute` runs on
 *   the server once approved and is counted; denied, the model says it did not send it;
 * - "Break …" starts an answer and fails after its first sentence (a turn that ends `failed`);
 * - anything else is answered "Hello." followed by the `note` the agent passes (per-request data).
 */
import { convertToModelMessages, jsonSchema, simulateReadableStream, stepCountIs, streamText, tool, type ToolSet, type UIMessage, type UIMessageChunk } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

type StreamPart = Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};

/** The text of `sentence`, said `times` times, as one text part. */
function say(sentence: string, times = 1): StreamPart[] {
  const words = Array.from({ length: times }, () => sentence).join(' ');
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'text-1' },
    ...words.split(/(?<= )/u).map((delta) => ({ type: 'text-delta' as const, id: 'text-1', delta })),
    { type: 'text-end', id: 'text-1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ] as StreamPart[];
}

/** The model's message when a "Break" question makes it fail. */
export const BREAK_MESSAGE = 'The mock model broke down on purpose.';

/** A sentence, then the model fails (the error after the text part, so both sides hold the same text). */
function breakDown(): StreamPart[] {
  const parts = say('I started to answer, and then');
  return [...parts.slice(0, -1), { type: 'error', error: new Error(BREAK_MESSAGE) }, ...parts.slice(-1)] as StreamPart[];
}

function call(toolName: string, input: unknown): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'tool-call', toolCallId: `call-${toolName}`, toolName, input: JSON.stringify(input) },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
  ] as StreamPart[];
}

type Prompt = Parameters<MockLanguageModelV3['doStream']>[0]['prompt'];

/** What the model says next for `prompt`. */
function answer(prompt: Prompt, note: string, times: number): StreamPart[] {
  const last = prompt.at(-1);
  const result = last?.role === 'tool' ? last.content.find((part) => part.type === 'tool-result') : undefined;
  if (result?.type === 'tool-result') {
    const output = result.output;
    if (output.type === 'execution-denied') return say('I did not send it.', times);
    if (result.toolName === 'locate') {
      const city = output.type === 'json' && typeof output.value === 'object' && output.value && 'city' in output.value ? String(output.value.city) : 'nowhere';
      return say(`You are in ${city}, so the weather there is what counts today.`, times);
    }
    return say('Sent 5 to Bob, and the receipt is in your inbox.', times);
  }
  const question = last?.role === 'user' ? last.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
  if (question.startsWith('Where am I')) return call('locate', { precision: 'city' });
  if (question.startsWith('Transfer')) return call('transfer', { amount: 5, to: 'Bob' });
  if (question.startsWith('Break')) return breakDown();
  return say(`Hello. ${note}`.trim());
}

export interface ToolsModelOptions {
  /** Delay before and between the model's stream parts, ms. Default 0. */
  delayMs?: number;
  /** What a plain answer says after "Hello." (the agent puts per-request data here). */
  note?: string;
  /** How many times the answer after a tool says its sentence (a longer continuation to break). Default 1. */
  repeat?: number;
  signal?: AbortSignal | undefined;
}

/** The page's tools; `onExecute` counts `transfer`'s server-side runs. */
export function pageTools(onExecute: () => void = () => undefined): ToolSet {
  return {
    locate: tool({
      description: 'Where the user is: answered by the browser.',
      inputSchema: jsonSchema<{ precision: string }>({ type: 'object', properties: { precision: { type: 'string' } }, required: ['precision'] }),
    }),
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

/**
 * `streamText` over the tools model, as the UI message chunk stream an AI SDK route answers
 * (`originalMessages` given, so a continuation's `start` names the message it continues).
 */
export async function streamTools(messages: UIMessage[], tools: ToolSet, options: ToolsModelOptions = {}): Promise<ReadableStream<UIMessageChunk>> {
  const delay = options.delayMs ?? 0;
  const model = new MockLanguageModelV3({
    doStream: async ({ prompt }) => ({ stream: simulateReadableStream<StreamPart>({ chunks: answer(prompt, options.note ?? '', options.repeat ?? 1), initialDelayInMs: delay, chunkDelayInMs: delay }) }),
  });
  const result = streamText({
    model,
    messages: await convertToModelMessages(messages),
    tools,
    stopWhen: stepCountIs(3),
    // The "Break" error reaches the page in the stream; streamText's default would also log it.
    onError: () => undefined,
    ...(options.signal && { abortSignal: options.signal }),
  });
  // The model's own error message, not the AI SDK's masked default: the page shows why it failed.
  return result.toUIMessageStream({ originalMessages: messages, onError: (error) => (error instanceof Error ? error.message : String(error)) });
}

/**
 * What a plain answer repeats of the request's per-request data (`context` = the AI SDK's
 * `body` and `metadata`, and one request header), so a test sees the agent got them.
 */
export function requestNote(context: unknown, tier: string | null): string {
  return context === undefined && tier === null ? '' : `You sent ${JSON.stringify(context ?? null)} as ${tier ?? 'nobody'}.`;
}

/** True for a question the tools model answers (the AI page's tool and approval prompts). */
export function isToolsQuestion(message: UIMessage | undefined): boolean {
  const text = message?.parts.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
  return message?.role === 'assistant' || ['Where am I', 'Transfer', 'Hello', 'Break'].some((start) => text.startsWith(start));
}
