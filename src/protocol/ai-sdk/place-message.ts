import type { UIMessage } from 'ai';

/**
 * Ends `messages` (in place) with `message`, as `useChat` sends it: a message already there
 * (the assistant message a continuation answers; a user message sent again to regenerate or
 * edit it) replaces itself and drops everything after it; a new one is appended. Shared by the
 * server's history and the client's `loadMessages`, so both fold a conversation alike.
 */
export function placeMessage(messages: UIMessage[], message: UIMessage): void {
  const at = messages.findIndex((other) => other.id === message.id && other.role === message.role);
  if (at >= 0) messages.length = at;
  messages.push(message);
}
