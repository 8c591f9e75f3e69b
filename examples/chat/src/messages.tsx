import type { ActionState, ConversationItem, MessageContent, OutboxEntry, TurnSnapshot } from 'lifeline-chat';
import { useLifeline, type UseConversationResult } from 'lifeline-chat/react';
import { useLayoutEffect, useRef, useState } from 'react';
import { ActionCard } from './action-card.js';
import { PartView } from './part-view.js';

const SUGGESTIONS = [
  'Propose three personas for a travel booking app',
  'How should I plan a product launch?',
  'Give me a plan for learning to cook',
];

const contentText = (content: MessageContent | undefined): string =>
  typeof content === 'string' ? content : content === undefined ? '' : JSON.stringify(content);

export type Tone = 'neutral' | 'live' | 'warn' | 'good' | 'bad';

export function Chip({ tone, children }: { tone: Tone; children: string }) {
  return <span className={`chip chip-${tone}`}>{children}</span>;
}

export const RECOVERY_WORDS = {
  resume: 'after a dropped connection',
  replay: 'from the server’s replay',
  reload: 'from this device after a reload',
} as const;

/** "Recovered 1 token …", "Recovered 3 tokens …": what a recovery brought back, in words. */
export function recoveredLabel(recovered: { events: number; path: keyof typeof RECOVERY_WORDS }, unit: 'token' | 'chunk'): string {
  return `Recovered ${recovered.events} ${unit}${recovered.events === 1 ? '' : 's'} ${RECOVERY_WORDS[recovered.path]}`;
}

export function turnChip(turn: TurnSnapshot): { tone: Tone; label: string } {
  switch (turn.status) {
    case 'pending':
      return { tone: 'live', label: 'Waiting for the first token' };
    case 'streaming':
      return { tone: 'live', label: 'Streaming' };
    case 'reconnecting':
      return {
        tone: 'warn',
        label: turn.connection.state === 'offline' ? 'Offline — will reconnect' : `Reconnecting${turn.connection.attempt > 1 ? ` (attempt ${turn.connection.attempt})` : ''}`,
      };
    case 'stalled':
      return { tone: 'warn', label: 'Stalled' };
    case 'recovering':
      return { tone: 'warn', label: 'Recovering' };
    case 'complete':
      return { tone: 'good', label: 'Complete' };
    case 'failed':
      return { tone: 'bad', label: 'Failed' };
    case 'cancelled':
      return { tone: 'neutral', label: 'Stopped' };
  }
}

export function submissionChip(entry: OutboxEntry | undefined): { tone: Tone; label: string } {
  switch (entry?.state) {
    case 'queued':
      return entry.lastError
        ? { tone: 'warn', label: `Queued — will retry (${entry.lastError.message})` }
        : { tone: 'neutral', label: 'Queued' };
    case 'sending':
      return { tone: 'live', label: entry.attempts > 1 ? `Sending (attempt ${entry.attempts})` : 'Sending' };
    case 'failed':
      return { tone: 'bad', label: `Not sent${entry.lastError ? `: ${entry.lastError.message}` : ''}` };
    default:
      return { tone: 'good', label: 'Sent' };
  }
}

function UserMessage({ item, onRetry, onDiscard }: { item: ConversationItem; onRetry: () => void; onDiscard: () => void }) {
  const chip = submissionChip(item.submission);
  return (
    <article className="message user" data-message-role="user">
      <div className="bubble">{contentText(item.content ?? item.submission?.content)}</div>
      <div className="meta">
        <Chip tone={chip.tone}>{chip.label}</Chip>
        {item.submission?.state === 'failed' && (
          <>
            <button type="button" className="button small" onClick={onRetry}>
              Retry
            </button>
            <button type="button" className="button small ghost" onClick={onDiscard}>
              Discard
            </button>
          </>
        )}
      </div>
    </article>
  );
}

const PENDING_NOTES = {
  queued: 'The answer starts once your message reaches the server.',
  sending: 'Delivering your message…',
  failed: 'Not sent — retry or discard your message.',
} as const;

/** Stands in for the answer while its message is queued, sending or refused; the user message carries the status. */
function PendingAnswer({ entry }: { entry: OutboxEntry }) {
  const state = entry.state === 'accepted' ? 'sending' : entry.state;
  return (
    <article className="message assistant" data-message-role="assistant" data-status={state}>
      <div className="avatar" aria-hidden="true">L</div>
      <div className="body">
        <div className={state === 'failed' ? 'text' : 'text placeholder'} data-turn-text="" />
        <div className="meta">
          <span className="meta-note">{PENDING_NOTES[state]}</span>
        </div>
      </div>
    </article>
  );
}

/** The `error` the server logged with `turn.end` (docs/protocol.md section 2), when it has the usual shape. */
function endErrorOf(turn: TurnSnapshot): { code: string; message: string } | undefined {
  const error = turn.endError;
  if (typeof error !== 'object' || error === null || Array.isArray(error)) return undefined;
  return typeof error['code'] === 'string' ? { code: error['code'], message: typeof error['message'] === 'string' ? error['message'] : '' } : undefined;
}

const isLive = (turn: TurnSnapshot) => turn.status !== 'complete' && turn.status !== 'failed' && turn.status !== 'cancelled';

function AssistantMessage({ turn, onResend }: { turn: TurnSnapshot; onResend: (() => void) | undefined }) {
  const client = useLifeline();
  const chip = turnChip(turn);
  const endError = endErrorOf(turn);
  const showCaret = turn.status === 'streaming' || turn.status === 'pending';
  return (
    <article className="message assistant" data-message-role="assistant" data-turn-id={turn.id} data-status={turn.status} data-end-error={endError?.code}>
      <div className="avatar" aria-hidden="true">L</div>
      <div className="body">
        {turn.parts.map((part, index) => (part.type === 'text' ? null : <PartView key={index} part={part} />))}
        <div className={showCaret ? 'text streaming' : 'text'} data-turn-text="">
          {turn.text}
        </div>
        {turn.actions.map((action: ActionState) => (
          <ActionCard key={action.callId} action={action} />
        ))}
        <div className="meta">
          <Chip tone={chip.tone}>{chip.label}</Chip>
          {turn.recovered && turn.recovered.events > 0 && (
            <Chip tone="good">{recoveredLabel(turn.recovered, 'token')}</Chip>
          )}
          {turn.error && <span className="meta-note">{turn.error.message}</span>}
          {endError?.code === 'ended_by_operator' && <span className="meta-note">{`Ended by support: ${endError.message}`}</span>}
          {turn.status === 'failed' && onResend && (
            <button type="button" className="button small" onClick={onResend}>
              Retry
            </button>
          )}
          {isLive(turn) && (
            <button type="button" className="button small ghost" onClick={() => void client.turn(turn.id).cancel()}>
              Stop
            </button>
          )}
        </div>
      </div>
    </article>
  );
}

/** Within this many pixels of the bottom, the reader is following the conversation. */
const FOLLOW_SLACK_PX = 40;

/**
 * Keeps the list at its bottom while the reader is there: after every render, new rows
 * and growing text included. Whether the reader is there is decided when they scroll,
 * before new rows arrive (measured after, a tall new answer would look like the reader
 * had scrolled away). Sending a message follows again.
 */
export function useFollowBottom(scroller: React.RefObject<HTMLElement | null>, userMessages: number) {
  const following = useRef(true);
  const [reading, setReading] = useState(false);
  const seenUserMessages = useRef(userMessages);

  const follow = () => {
    following.current = true;
    setReading(false);
    const box = scroller.current;
    if (box) box.scrollTop = box.scrollHeight;
  };

  useLayoutEffect(() => {
    if (userMessages > seenUserMessages.current) following.current = true;
    seenUserMessages.current = userMessages;
    const box = scroller.current;
    if (box && following.current) box.scrollTop = box.scrollHeight;
  });

  const onScroll = () => {
    const box = scroller.current;
    if (!box) return;
    following.current = box.scrollHeight - box.scrollTop - box.clientHeight <= FOLLOW_SLACK_PX;
    setReading(!following.current);
  };

  return { reading, follow, onScroll };
}

export function MessageList({
  conversationId,
  conversation,
  onSend,
}: {
  conversationId: string;
  conversation: UseConversationResult;
  onSend: (text: string) => void;
}) {
  const { messages, retry, discard, resend } = conversation;
  const scroller = useRef<HTMLElement>(null);
  const { reading, follow, onScroll } = useFollowBottom(scroller, messages.filter((item) => item.role === 'user').length);

  const rows: React.ReactNode[] = [];
  let previousUser: ConversationItem | undefined;
  for (const item of messages) {
    if (item.role === 'user') {
      previousUser = item;
      const entry = item.submission;
      rows.push(
        <UserMessage
          key={`u-${item.key}`}
          item={item}
          onRetry={() => entry && void retry(entry.operationId)}
          onDiscard={() => entry && void discard(entry.operationId)}
        />,
      );
      if (entry && entry.state !== 'accepted' && !entry.turnId) rows.push(<PendingAnswer key={`p-${item.key}`} entry={entry} />);
    } else if (item.turn) {
      const turnId = item.turn.id;
      rows.push(
        <AssistantMessage
          key={`a-${item.key}`}
          turn={item.turn}
          onResend={previousUser === undefined ? undefined : () => void resend(turnId)}
        />,
      );
      // Only the user item right before a turn is that turn's message.
      previousUser = undefined;
    }
  }

  return (
    <section className="messages" ref={scroller} onScroll={onScroll} data-conversation-id={conversationId} aria-label="Messages">
      {rows.length === 0 ? (
        <div className="empty">
          <h1>Messages that survive the network</h1>
          <p>
            Ask something, then use the fault lab on the right to cut, stall or restart the connection while the answer streams. Nothing
            gets lost or duplicated.
          </p>
          <div className="suggestions">
            {SUGGESTIONS.map((s) => (
              <button key={s} type="button" className="suggestion" onClick={() => onSend(s)}>
                {s}
              </button>
            ))}
          </div>
        </div>
      ) : (
        rows
      )}
      {reading && (
        <button type="button" className="button small jump-latest" onClick={follow}>
          Jump to latest <span aria-hidden="true">↓</span>
        </button>
      )}
    </section>
  );
}
