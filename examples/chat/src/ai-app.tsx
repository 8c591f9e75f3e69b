import type { LifelineChatTransport } from 'lifeline-chat/ai-sdk';
import { useConversation } from 'lifeline-chat/react';
import { Suspense } from 'react';
import { AiChat } from './ai-chat.js';
import { ToolsPanel, useAutoLocate } from './ai-tools.js';
import { ConversationNav, TopBar } from './chrome.js';
import { AI_CONVERSATIONS, useConversationList } from './conversations.js';
import { Devtools } from './devtools.js';
import { FaultLab } from './fault-lab.js';

/** The AI SDK page: `useChat` from `@ai-sdk/react` with `createChatTransport(client)`. */
export function AiApp({ transport }: { transport: LifelineChatTransport }) {
  const { list, current, select, create, titleFrom } = useConversationList(AI_CONVERSATIONS);
  const conversation = useConversation(current);
  const [autoLocate, setAutoLocate] = useAutoLocate();

  return (
    <div className="app">
      <TopBar page="ai" subtitle="useChat example" status={conversation.status} />
      <ConversationNav list={list} current={current} onSelect={select} onCreate={create} />

      <main className="chat">
        {/* useInitialMessages suspends while this device's storage and the server's list are read. */}
        <Suspense
          fallback={
            <section className="messages" data-conversation-id={current} aria-label="Messages" aria-busy="true">
              <p className="empty">Loading the conversation…</p>
            </section>
          }
        >
          <AiChat key={current} chatId={current} transport={transport} conversation={conversation} onFirstMessage={titleFrom} autoLocate={autoLocate} />
        </Suspense>
      </main>

      <aside className="side">
        <ToolsPanel autoLocate={autoLocate} onAutoLocate={setAutoLocate} />
        <FaultLab />
        <Devtools />
      </aside>
    </div>
  );
}
