'use client';
// `lifeline/ai-sdk/react`: React helpers for `useChat` over `lifeline/ai-sdk` (docs/protocol.md §9).
// Every file of this entry starts with 'use client', like `lifeline/react`.
export { useInitialMessages } from './use-initial-messages.js';
