'use client';
/**
 * The conversation `useChat` starts from, in one line inside a component: the hook suspends
 * (React Suspense) while `transport.loadMessages` reads this device's storage and the
 * server's list, then answers the messages. `useChat` reads its `messages` option once, when
 * it creates the chat, so they have to be there before the first render that calls it.
 */
import type { UIMessage } from 'ai';
import { useEffect, useState } from 'react';
import type { LifelineChatTransport } from '../transport.js';

type Load = { phase: 'loading'; promise: Promise<void> } | { phase: 'loaded'; messages: UIMessage[] } | { phase: 'failed'; error: unknown };

/**
 * Loads in flight or not yet taken by a mounted component, per transport and chat. A
 * suspended component keeps no state of its own until it mounts, so the load has to live
 * outside it; the mounted component then drops it, so a later mount reads afresh.
 */
const loads = new WeakMap<LifelineChatTransport, Map<string, Load>>();

function loadsOf(transport: LifelineChatTransport): Map<string, Load> {
  let byChat = loads.get(transport);
  if (!byChat) loads.set(transport, (byChat = new Map()));
  return byChat;
}

/** The loaded messages, or throws: the pending load's promise (Suspense), or its error (an error boundary). */
function read(transport: LifelineChatTransport, chatId: string): UIMessage[] {
  const byChat = loadsOf(transport);
  let load = byChat.get(chatId);
  if (!load) {
    const promise = transport.loadMessages(chatId).then(
      (messages) => void byChat.set(chatId, { phase: 'loaded', messages }),
      (error: unknown) => void byChat.set(chatId, { phase: 'failed', error }),
    );
    byChat.set(chatId, (load = { phase: 'loading', promise }));
  }
  if (load.phase === 'loading') throw load.promise;
  // A failed load stays: rendering again would only fail again (a disposed client, broken storage).
  if (load.phase === 'failed') throw load.error;
  return load.messages;
}

/**
 * The conversation `chatId` as `UIMessage`s for `useChat`'s `messages`: every turn folded
 * (continuations in the message they continue, a tool call still waiting in its waiting
 * state), as `transport.loadMessages` answers it. Suspends until they are read: render it
 * inside a `<Suspense>` boundary. A load that fails throws its error to the nearest error
 * boundary. Read once per mounted component and chat id (the chat then lives in `useChat`);
 * another chat id suspends again for that chat.
 *
 * @example
 * function Chat({ chatId }: { chatId: string }) {
 *   const { messages, sendMessage } = useChat({ id: chatId, transport, messages: useInitialMessages(transport, chatId), resume: true });
 *   // …
 * }
 * // <Suspense fallback={<p>Loading…</p>}><Chat chatId={chatId} /></Suspense>
 */
export function useInitialMessages(transport: LifelineChatTransport, chatId: string): UIMessage[] {
  const [held, setHeld] = useState(() => ({ transport, chatId, messages: read(transport, chatId) }));
  let current = held;
  if (held.transport !== transport || held.chatId !== chatId) {
    // Another chat on the same component: React's pattern for state derived from props.
    current = { transport, chatId, messages: read(transport, chatId) };
    setHeld(current);
  }
  const { messages } = current;
  useEffect(() => {
    // Mounted: the component holds the messages; the next mount loads what is new by then.
    const byChat = loadsOf(transport);
    const load = byChat.get(chatId);
    if (load?.phase === 'loaded' && load.messages === messages) byChat.delete(chatId);
  }, [transport, chatId, messages]);
  return messages;
}
