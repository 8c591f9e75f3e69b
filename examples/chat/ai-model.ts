/**
 * A deterministic model for the AI SDK page, run through the real `streamText` (no network,
 * no keys): the AI SDK's own test model (`MockLanguageModelV3`) answering a weather
 * question in two steps, reasoning and a `weather` tool call, then the answer text
 * token by token. The same prompt always gives the same chunks, so a test can build the
 * reference message by running it again.
 */
import { convertToModelMessages, jsonSchema, simulateReadableStream, stepCountIs, streamText, tool, type UIMessage, type UIMessageChunk } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

export interface MockModelOptions {
  /** Delay before and between the model's stream parts, ms. Default 25. */
  delayMs?: number;
  /** Words of the answer text. Default 60. */
  words?: number;
}

type StreamPart = Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};

/** The place asked about: the last capitalised word of the question, else "Oslo". */
export function placeOf(question: string): string {
  return /([A-Z][a-zà-ÿ]+)[^A-Z]*$/u.exec(question)?.[1] ?? 'Oslo';
}

function forecast(place: string): { place: string; forecast: string; celsius: number } {
  let h = 0;
  for (const char of place) h = (h * 31 + char.charCodeAt(0)) >>> 0;
  return { place, forecast: ['sunny', 'cloudy', 'rainy'][h % 3]!, celsius: 5 + (h % 20) };
}

function toolStep(place: string): StreamPart[] {
  const input = JSON.stringify({ place });
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'reasoning-start', id: 'reasoning-1' },
    ...`The user wants the weather in ${place}. I should call the weather tool first.`.split(/(?<= )/u).map((delta) => ({ type: 'reasoning-delta' as const, id: 'reasoning-1', delta })),
    { type: 'reasoning-end', id: 'reasoning-1' },
    { type: 'tool-input-start', id: 'call-1', toolName: 'weather' },
    { type: 'tool-input-delta', id: 'call-1', delta: input.slice(0, 9) },
    { type: 'tool-input-delta', id: 'call-1', delta: input.slice(9) },
    { type: 'tool-input-end', id: 'call-1' },
    { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
  ] as StreamPart[];
}

function textStep(place: string, words: number): StreamPart[] {
  const { forecast: sky, celsius } = forecast(place);
  const sentence = `In ${place} it is ${sky} today at ${celsius} °C, so plan for that and check again tomorrow morning. `;
  const tokens = sentence.repeat(Math.ceil(words / 20)).split(/(?<= )/u).slice(0, words);
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'text-1' },
    ...tokens.map((delta) => ({ type: 'text-delta' as const, id: 'text-1', delta })),
    { type: 'text-end', id: 'text-1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ] as StreamPart[];
}

/** The test model: its first step calls the tool, the step after the tool result answers. */
export function createMockModel(options: MockModelOptions = {}): MockLanguageModelV3 {
  const delay = options.delayMs ?? 25;
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const question = prompt.filter((message) => message.role === 'user').at(-1);
      const text = question?.content.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
      const chunks = prompt.at(-1)?.role === 'tool' ? textStep(placeOf(text), options.words ?? 60) : toolStep(placeOf(text));
      return { stream: simulateReadableStream<StreamPart>({ chunks, initialDelayInMs: delay, chunkDelayInMs: delay }) };
    },
  });
}

/** The weather tool the model calls (executed on the server: its output is part of the message). */
export const weatherTool = tool({
  description: 'The weather forecast for a place.',
  inputSchema: jsonSchema<{ place: string }>({ type: 'object', properties: { place: { type: 'string' } }, required: ['place'] }),
  execute: async ({ place }) => forecast(place),
});

/** `streamText` over the mock model, as a UI message chunk stream. */
export async function streamAnswer(messages: UIMessage[], options: MockModelOptions & { signal?: AbortSignal } = {}): Promise<ReadableStream<UIMessageChunk>> {
  const result = streamText({
    model: createMockModel(options),
    messages: await convertToModelMessages(messages),
    tools: { weather: weatherTool },
    stopWhen: stepCountIs(3),
    ...(options.signal && { abortSignal: options.signal }),
  });
  return result.toUIMessageStream();
}
