// `lifeline-chat/ai-sdk`: the AI SDK's `useChat` over Lifeline (docs/protocol.md §9). Types from `ai` only.
export { createChatTransport } from './transport.js';
export type { ChatTransportOptions, LifelineChatTransport } from './transport.js';
export { buildUIMessage } from '../protocol/ai-sdk/ui-message.js';
