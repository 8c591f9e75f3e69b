/**
 * The example server's agent: messages sent by the AI SDK page (`useChat` over
 * `lifeline/ai-sdk`, whose content is the user `UIMessage` itself, docs/protocol.md §9) are
 * answered by the deterministic mock model through the real `streamText`; everything else
 * by the fake agent of the Lifeline hooks page. One handler and one turn log serve both pages.
 */
import type { Agent, MessageContent, TurnLog } from 'lifeline/server';
import { uiMessageAgent } from 'lifeline/server/ai-sdk';
import { createFakeAgent } from './agent.js';
import { streamAnswer } from './ai-model.js';

export interface ExampleAgentOptions {
  /** The fake agent's deltas per second. */
  tokensPerSecond: number;
  /** The mock model's delay before and between its stream parts, ms. */
  modelDelayMs: number;
  /** Words of the mock model's answer text. */
  modelWords: number;
  /** The handler's turn log: the mock model gets the conversation rebuilt from it. */
  log: TurnLog;
}

/** Reads `AI_MODEL_DELAY_MS`, falling back to 40 for anything that is not a non-negative number. */
export function modelDelayFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['AI_MODEL_DELAY_MS']);
  return env['AI_MODEL_DELAY_MS'] !== undefined && Number.isFinite(value) && value >= 0 ? value : 40;
}

/** True for content the AI SDK transport sent: a user `UIMessage` (`id`, `role: 'user'`, `parts`). */
export function isUIMessageContent(content: MessageContent): boolean {
  return typeof content === 'object' && content['role'] === 'user' && Array.isArray(content['parts']) && typeof content['id'] === 'string';
}

export function createExampleAgent(options: ExampleAgentOptions): Agent {
  const fake = createFakeAgent({ tokensPerSecond: options.tokensPerSecond });
  const model = uiMessageAgent(({ messages, signal }) => streamAnswer(messages, { delayMs: options.modelDelayMs, words: options.modelWords, signal }), { log: options.log });
  return (context) => (isUIMessageContent(context.content) ? model(context) : fake(context));
}
