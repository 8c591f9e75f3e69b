// Lifeline's React bindings: thin hooks over the client's external stores.
export { LifelineProvider, useLifeline } from './context.js';
export type { LifelineProviderProps } from './context.js';
export { useConversation, conversationStatus } from './use-conversation.js';
export type { ConversationStatus, UseConversationResult } from './use-conversation.js';
export { useTurn } from './use-turn.js';
export { useLifelineDiagnostics } from './use-diagnostics.js';
export { useStorageStatus } from './use-storage-status.js';
