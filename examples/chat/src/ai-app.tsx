import type { UIMessage } from 'ai';
import type { LifelineChatTransport } from 'lifeline/ai-sdk';
import { useConversation } from 'lifeline/react';
import { useEffect, useState } from 'react';
import { AiChat } from './ai-chat.js';
import { ConversationNav, TopBar } from './chrome.js';
import { AI_CONVERSATIONS, useConversationList } from './conversations.js';
import { Devtools } from './devtools.js';
import { FaultLab } from './fault-lab.js';

/**
 * The conversation as `UIMessage`s for useChat's initial `messages` (from this device's
 * storage and the server's list), or `undefined` while they load: useChat reads them once.
 */
function useInitialMessages(transport: LifelineChatTransport, chatId: string): UIMessage[] | undefined {
  const [loaded, setLoaded] = useState<{ chatId: string; messages: UIMessage[] }>();
  useEffect(() => {
    let current = true;
    transport.loadMessages(chatId).then(
      (messages) => current && setLoaded({ chatId, messages }),
      () => current && setLoaded({ chatId, messages: [] }),
    );
    return () => {
      current = false;
    };
  }, [transport, chatId]);
  return loaded?.chatId === chatId ? loaded.messages : undefined;
}

/** The AI SDK page: `useChat` from `@ai-sdk/react` with `createChatTransport(client)`. */
export function AiApp({ transport }: { transport: LifelineChatTransport }) {
  const { list, current, select, create, titleFrom } = useConversationList(AI_CONVERSATIONS);
  const conversation = useConversation(current);
  const initialMessages = useInitialMessages(transport, current);

  return (
    <div className="app">
      <TopBar page="ai" subtitle="useChat example" status={conversation.status} />
      <ConversationNav list={list} current={current} onSelect={select} onCreate={create} />

      <main className="chat">
        {initialMessages ? (
          <AiChat key={current} chatId={current} initialMessages={initialMessages} transport={transport} conversation={conversation} onFirstMessage={titleFrom} />
        ) : (
          <section className="messages" data-conversation-id={current} aria-label="Messages" aria-busy="true">
            <p className="empty">Loading the conversation…</p>
          </section>
        )}
      </main>

      <aside className="side">
        <FaultLab />
        <Devtools />
      </aside>
    </div>
  );
}
