/**
 * The example server's agent: messages sent by the AI SDK page (`useChat` over
 * `lifeline-chat/ai-sdk`, whose content is the `UIMessage` itself, docs/protocol.md §9) are
 * answered by the deterministic mock models through the real `streamText` (the weather model,
 * or the tools model for its questions and every continuation); everything else by the fake
 * agent of the Lifeline hooks page. One handler and one turn log serve both pages.
 */
import type { Agent, MessageContent, TurnLog } from 'lifeline-chat/server';
import { uiMessageAgent } from 'lifeline-chat/server/ai-sdk';
import { createFakeAgent } from './agent.js';
import { streamAnswer } from './ai-model.js';
import { isToolsQuestion, pageTools, requestNote, streamTools } from './ai-tools-model.js';

export interface ExampleAgentOptions {
  /** The fake agent's deltas per second. */
  tokensPerSecond: number;
  /** The mock model's delay before and between its stream parts, ms. */
  modelDelayMs: number;
  /** Words of the mock model's answer text. */
  modelWords: number;
  /** The handler's turn log: the mock model gets the conversation rebuilt from it. */
  log: TurnLog;
  /** Called each time the `/ai` page's `transfer` tool runs its `execute` (after an approval). */
  onTransfer?: () => void;
}

/** The request header whose value the tools model repeats (per-request data, docs/protocol.md §1). */
export const TIER_HEADER = 'x-example-tier';

/** How often the tools model says its sentence after a tool: a continuation long enough to cut or reload mid-way. */
export const CONTINUATION_REPEAT = 10;

/** Reads `AI_MODEL_DELAY_MS`, falling back to 40 for anything that is not a non-negative number. */
export function modelDelayFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['AI_MODEL_DELAY_MS']);
  return env['AI_MODEL_DELAY_MS'] !== undefined && Number.isFinite(value) && value >= 0 ? value : 40;
}

/** True for content the AI SDK transport sent: a `UIMessage` (`id`, `role`, `parts`): a user message or a continuation. */
export function isUIMessageContent(content: MessageContent): boolean {
  return typeof content === 'object' && (content['role'] === 'user' || content['role'] === 'assistant') && Array.isArray(content['parts']) && typeof content['id'] === 'string';
}

export function createExampleAgent(options: ExampleAgentOptions): Agent {
  const fake = createFakeAgent({ tokensPerSecond: options.tokensPerSecond });
  const tools = pageTools(options.onTransfer);
  const model = uiMessageAgent(
    ({ message, messages, context, headers, signal }) =>
      isToolsQuestion(message)
        ? streamTools(messages, tools, { delayMs: options.modelDelayMs, note: requestNote(context, headers.get(TIER_HEADER)), repeat: CONTINUATION_REPEAT, signal })
        : streamAnswer(messages, { delayMs: options.modelDelayMs, words: options.modelWords, signal }),
    { log: options.log },
  );
  return (context) => (isUIMessageContent(context.content) ? model(context) : fake(context));
}
