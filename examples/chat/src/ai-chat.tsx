/**
 * The AI SDK page's chat: the real `useChat` over `lifeline-chat/ai-sdk`'s transport, started from
 * the stored conversation in one line (`useInitialMessages`, which suspends while it loads).
 * useChat holds the messages; Lifeline's own view of the same conversation (`useConversation`)
 * says what the network is doing, which useChat never sees: a cut, a stall or an outage
 * is repaired inside the stream it reads.
 */
import { useChat } from '@ai-sdk/react';
import { getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, lastAssistantMessageIsCompleteWithToolCalls, type UIMessage } from 'ai';
import type { OutboxEntry, TurnSnapshot } from 'lifeline-chat';
import type { LifelineChatTransport } from 'lifeline-chat/ai-sdk';
import { useInitialMessages } from 'lifeline-chat/ai-sdk/react';
import type { UseConversationResult } from 'lifeline-chat/react';
import { useEffect, useRef } from 'react';
import { AiPart } from './ai-parts.js';
import { CITIES, REQUEST_DATA } from './ai-request.js';
import { ChatStatusLine } from './ai-status.js';
import { ToolActions, type ToolAnswers } from './ai-tools.js';
import { Composer } from './composer.js';
import { Chip, recoveredLabel, submissionChip, turnChip, useFollowBottom } from './messages.js';

const SUGGESTIONS = ['What is the weather in Bergen?', 'Should I pack an umbrella for Lisbon?', 'Where am I?', 'Transfer 5 to Bob', 'Hello'];

/** A tool call only this page can answer: a client tool without output, or an approval request. */
const waitsForPage = (part: UIMessage['parts'][number]): boolean =>
  isToolUIPart(part) && ((getToolName(part) === 'locate' && part.state === 'input-available') || part.state === 'approval-requested');

/** useChat sends the last message again by itself once the page answered its tool calls or approvals: a continuation. */
const answeredByPage = (options: { messages: UIMessage[] }): boolean =>
  lastAssistantMessageIsCompleteWithToolCalls(options) || lastAssistantMessageIsCompleteWithApprovalResponses(options);

const textOf = (message: UIMessage): string => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

/**
 * Lifeline's side of the conversation: by assistant message id its newest turn (the first
 * turn's id, or the latest continuation of that message), submissions by user message id.
 */
export interface LifelineView {
  turns: ReadonlyMap<string, TurnSnapshot>;
  submissions: ReadonlyMap<string, OutboxEntry>;
}

function lifelineView(conversation: UseConversationResult): LifelineView {
  const turns = new Map<string, TurnSnapshot>();
  const submissions = new Map<string, OutboxEntry>();
  let continued: string | undefined;
  for (const item of conversation.messages) {
    if (item.turn) turns.set(continued ?? item.turn.id, item.turn);
    const content = item.content ?? item.submission?.content;
    const id = typeof content === 'object' && typeof content['id'] === 'string' ? content['id'] : undefined;
    // A submitted assistant message is a continuation: its turn extends that message.
    continued = item.role === 'user' && typeof content === 'object' && content['role'] === 'assistant' ? id : undefined;
    if (item.submission && id !== undefined && continued === undefined) submissions.set(id, item.submission);
  }
  return { turns, submissions };
}

function UserBubble({ message, entry }: { message: UIMessage; entry: OutboxEntry | undefined }) {
  const chip = submissionChip(entry);
  return (
    <article className="message user" data-message-role="user" data-message-id={message.id}>
      <div className="bubble">{textOf(message)}</div>
      <div className="meta">
        <Chip tone={chip.tone}>{chip.label}</Chip>
      </div>
    </article>
  );
}

interface AssistantBubbleProps {
  message: UIMessage;
  turn: TurnSnapshot | undefined;
  streaming: boolean;
  answers: ToolAnswers;
  /** Shown on the last answer once useChat is ready. */
  onRegenerate?: (() => void) | undefined;
}

function AssistantBubble({ message, turn, streaming, answers, onRegenerate }: AssistantBubbleProps) {
  const chip = turn && turnChip(turn);
  return (
    <article className="message assistant" data-message-role="assistant" data-message-id={message.id} data-status={turn?.status}>
      <div className="avatar" aria-hidden="true">AI</div>
      <div className="body">
        {message.parts.map((part, index) => (
          <div key={index}>
            <AiPart part={part} streaming={streaming} />
            <ToolActions part={part} answers={answers} disabled={streaming} />
          </div>
        ))}
        <div className="meta">
          {chip && <Chip tone={chip.tone}>{chip.label}</Chip>}
          {turn?.recovered && turn.recovered.events > 0 && (
            <Chip tone="good">{recoveredLabel(turn.recovered, 'chunk')}</Chip>
          )}
          {onRegenerate && (
            <button type="button" className="button small" onClick={onRegenerate}>
              Regenerate
            </button>
          )}
        </div>
      </div>
    </article>
  );
}

export interface AiChatProps {
  chatId: string;
  transport: LifelineChatTransport;
  conversation: UseConversationResult;
  onFirstMessage: (text: string) => void;
  /** Answer `locate` with the first city as soon as its call arrives live. */
  autoLocate: boolean;
}

export function AiChat({ chatId, transport, conversation, onFirstMessage, autoLocate }: AiChatProps) {
  const auto = useRef(autoLocate);
  auto.current = autoLocate;
  const chat = useChat({
    id: chatId,
    transport,
    messages: useInitialMessages(transport, chatId),
    resume: true,
    sendAutomaticallyWhen: answeredByPage,
    // Runs when the call arrives in a stream this page reads. Its output is written down once
    // sent; a reload before that replays the call, and this runs again (docs/protocol.md §9).
    onToolCall: ({ toolCall }) => {
      if (toolCall.toolName === 'locate' && auto.current) answers.locate(toolCall.toolCallId, CITIES[0]);
    },
  });
  const { messages, sendMessage, regenerate, status, error, stop } = chat;
  const answers: ToolAnswers = {
    // Not awaited: useChat's answer functions wait for the stream that is still delivering the call.
    locate: (toolCallId, city) => void chat.addToolOutput({ tool: 'locate', toolCallId, output: { city } }),
    approve: (id, approved) => void chat.addToolApprovalResponse({ id, approved }),
  };
  const lifeline = lifelineView(conversation);
  const scroller = useRef<HTMLElement>(null);
  const { reading, follow, onScroll } = useFollowBottom(scroller, messages.filter((m) => m.role === 'user').length);
  // Whether the stream useChat reads was opened by a send on this page (else it is a resume).
  const sentHere = useRef(false);
  const busy = status === 'submitted' || status === 'streaming';
  if (!busy) sentHere.current = false;

  // What the tests (and a curious reader in the console) look at.
  useEffect(() => {
    Object.assign(window, { lifelineChat: { chatId, messages, status } });
  });

  const send = (text: string) => {
    sentHere.current = true;
    if (messages.length === 0) onFirstMessage(text);
    void sendMessage({ text }, REQUEST_DATA);
  };
  // useChat's stop() aborts the stream it reads: for a send, the transport cancels the turn
  // (or withdraws a message still queued); for a resumed stream it would only detach, so the
  // turn is cancelled through the transport and its stream ends by itself.
  const onStop = () => (sentHere.current ? void stop() : void transport.cancel(chatId));

  const last = messages.at(-1);
  const waiting = busy && last?.role === 'user';
  // A tool call waits for this page: a new message now would reach the model without its result.
  const asking = !busy && last?.role === 'assistant' && last.parts.some(waitsForPage);
  return (
    <>
      <section className="messages" ref={scroller} onScroll={onScroll} data-conversation-id={chatId} aria-label="Messages">
        {messages.length === 0 ? (
          <div className="empty">
            <h1>useChat that survives the network</h1>
            <p>
              This page runs the AI SDK’s own <code>useChat</code> over Lifeline. Ask about the weather: the model thinks, calls a tool, then
              answers. Ask “Where am I?” (a tool this page answers) or “Transfer 5 to Bob” (a tool that waits for your approval). Cut, stall or
              restart the connection mid-answer, or reload the page — the message ends whole, with no part twice, and every answer counts once.
            </p>
            <div className="suggestions">
              {SUGGESTIONS.map((s) => (
                <button key={s} type="button" className="suggestion" onClick={() => send(s)}>
                  {s}
                </button>
              ))}
            </div>
          </div>
        ) : (
          messages.map((message, index) =>
            message.role === 'user' ? (
              <UserBubble key={message.id} message={message} entry={lifeline.submissions.get(message.id)} />
            ) : (
              <AssistantBubble
                key={message.id}
                message={message}
                turn={lifeline.turns.get(message.id)}
                streaming={busy && index === messages.length - 1}
                answers={answers}
                onRegenerate={!busy && index === messages.length - 1 ? () => void regenerate(REQUEST_DATA) : undefined}
              />
            ),
          )
        )}
        {waiting && (
          <article className="message assistant" data-message-role="assistant" data-status="sending">
            <div className="avatar" aria-hidden="true">AI</div>
            <div className="body">
              <div className="text placeholder" />
            </div>
          </article>
        )}
        {reading && (
          <button type="button" className="button small jump-latest" onClick={follow}>
            Jump to latest <span aria-hidden="true">↓</span>
          </button>
        )}
      </section>
      <ChatStatusLine status={status} error={error} last={last} lifeline={lifeline} onStop={onStop} asking={asking} />
      <Composer
        onSend={send}
        busy={busy || asking}
        placeholder={asking ? 'Answer the tool call above first: the model waits for it.' : 'Ask about the weather — try “What is the weather in Bergen?”'}
      />
    </>
  );
}
