import { useConversation } from 'lifeline-chat/react';
import { useCallback } from 'react';
import { ConversationNav, TopBar } from './chrome.js';
import { Composer } from './composer.js';
import { HOOKS_CONVERSATIONS, useConversationList } from './conversations.js';
import { Devtools } from './devtools.js';
import { FaultLab } from './fault-lab.js';
import { MessageList } from './messages.js';

/** The Lifeline hooks page: `useConversation` renders the turns as the client follows them. */
export function App() {
  const { list, current, select, create, titleFrom } = useConversationList(HOOKS_CONVERSATIONS);
  const conversation = useConversation(current);

  const send = useCallback(
    (text: string) => {
      conversation.send(text);
      titleFrom(text);
    },
    [conversation.send, titleFrom],
  );

  return (
    <div className="app">
      <TopBar page="hooks" subtitle="example chat" status={conversation.status} />
      <ConversationNav list={list} current={current} onSelect={select} onCreate={create} />

      <main className="chat">
        <MessageList conversationId={current} conversation={conversation} onSend={send} />
        <Composer onSend={send} />
      </main>

      <aside className="side">
        <FaultLab />
        <Devtools />
      </aside>
    </div>
  );
}
