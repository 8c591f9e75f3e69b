'use client';
// Lifeline's React bindings: thin hooks over the client's external stores. Every file of
// this entry starts with 'use client' (tsc keeps the directive in dist/react), so React
// Server Components frameworks (Next.js App Router) treat the hooks as client code.
export { LifelineProvider, useLifeline } from './context.js';
export type { LifelineProviderProps } from './context.js';
export { useConversation, conversationStatus } from './use-conversation.js';
export type { ConversationStatus, UseConversationResult } from './use-conversation.js';
export { useTurn } from './use-turn.js';
export { useLifelineDiagnostics } from './use-diagnostics.js';
export { useStorageStatus } from './use-storage-status.js';
