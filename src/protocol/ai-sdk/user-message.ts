import type { UIMessage } from 'ai';
import type { MessageContent } from '../schemas.js';

/**
 * The user `UIMessage` a message's content stands for: the message itself when the AI SDK
 * transport sent it (docs/protocol.md §9), else a text message (`id` = the protocol's message id).
 */
export function userMessage(content: MessageContent, messageId: string): UIMessage {
  if (typeof content === 'object' && content['role'] === 'user' && Array.isArray(content['parts']) && typeof content['id'] === 'string') {
    return content as unknown as UIMessage;
  }
  const text = typeof content === 'string' ? content : typeof content['text'] === 'string' ? content['text'] : JSON.stringify(content);
  return { id: messageId, role: 'user', parts: [{ type: 'text', text }] };
}
