'use client';
// `lifeline-chat/ai-sdk/react`: React helpers for `useChat` over `lifeline-chat/ai-sdk` (docs/protocol.md §9).
// Every file of this entry starts with 'use client', like `lifeline-chat/react`.
export { useInitialMessages } from './use-initial-messages.js';
