/**
 * One line under the AI SDK page's messages that says what is going on, in two voices:
 * useChat's status (all it knows is submitted, streaming, ready or error) and what
 * Lifeline is doing underneath (queued, reconnecting, stalled, recovering, cancelled).
 */
import type { ChatStatus, UIMessage } from 'ai';
import type { OutboxEntry, TurnSnapshot } from 'lifeline-chat';
import type { LifelineView } from './ai-chat.js';
import { Chip, RECOVERY_WORDS, type Tone } from './messages.js';

const CHAT_TONES: Record<ChatStatus, Tone> = { submitted: 'live', streaming: 'live', ready: 'good', error: 'bad' };

function submissionWords(entry: OutboxEntry | undefined, turn: TurnSnapshot | undefined): { tone: Tone; text: string } {
  switch (entry?.state) {
    case 'queued':
      return entry.lastError
        ? { tone: 'warn', text: `Your message is saved on this device; sending failed (${entry.lastError.message}), Lifeline retries it.` }
        : { tone: 'neutral', text: 'Your message is queued on this device and goes out as soon as it can.' };
    case 'sending':
      return { tone: 'live', text: entry.attempts > 1 ? `Sending your message (attempt ${entry.attempts})…` : 'Sending your message…' };
    case 'failed':
      return { tone: 'bad', text: `Your message was not sent${entry.lastError ? `: ${entry.lastError.message}` : '.'}` };
    default:
      return turn ? turnWords(turn, true) : { tone: 'live', text: 'Waiting for the answer to start…' };
  }
}

/** What Lifeline repaired in this turn that useChat never saw, as a sentence (or nothing). */
const repaired = (turn: TurnSnapshot): string =>
  turn.recovered && turn.recovered.events > 0 ? ` Lifeline recovered ${turn.recovered.events} chunks ${RECOVERY_WORDS[turn.recovered.path]}; useChat saw no break.` : '';

function turnWords(turn: TurnSnapshot, busy: boolean): { tone: Tone; text: string } {
  switch (turn.status) {
    case 'pending':
      return { tone: 'live', text: 'The server accepted your message; waiting for the first chunk…' };
    case 'streaming':
      return { tone: 'live', text: `The answer is streaming.${repaired(turn)}` };
    case 'reconnecting':
      return turn.connection.state === 'offline'
        ? { tone: 'warn', text: 'Offline. Lifeline reconnects when the network is back; useChat’s stream just waits.' }
        : { tone: 'warn', text: `The connection dropped. Lifeline is reconnecting${turn.connection.attempt > 1 ? ` (attempt ${turn.connection.attempt})` : ''}; useChat’s stream just waits, nothing is lost.` };
    case 'stalled':
      return { tone: 'warn', text: 'Nothing arrived for a while. Lifeline noticed the stall and reconnects.' };
    case 'recovering':
      return { tone: 'warn', text: 'Fetching the missed chunks from the server…' };
    case 'complete':
      return busy
        ? { tone: 'live', text: `The answer is streaming.${repaired(turn)}` }
        : { tone: 'good', text: `Done.${repaired(turn)} Reload or open this chat in another tab: it shows the same messages.` };
    case 'cancelled':
      return { tone: 'neutral', text: 'Stopped. The turn was cancelled on the server and will not resume.' };
    case 'failed':
      return { tone: 'bad', text: `The answer failed${turn.error ? `: ${turn.error.message}` : '.'}` };
  }
}

function describe(status: ChatStatus, error: Error | undefined, last: UIMessage | undefined, lifeline: LifelineView, asking: boolean): { tone: Tone; text: string } {
  if (status === 'error') return { tone: 'bad', text: `useChat reported an error: ${error?.message ?? 'unknown'}` };
  if (asking) return { tone: 'warn', text: 'The model waits for your answer to the tool call above. Your answer is saved on this device before it is sent, and counts once.' };
  const busy = status === 'submitted' || status === 'streaming';
  if (last?.role === 'user') {
    const entry = lifeline.submissions.get(last.id);
    const turn = entry?.turnId === undefined ? undefined : lifeline.turns.get(entry.turnId);
    return submissionWords(entry, turn);
  }
  const turn = last && lifeline.turns.get(last.id);
  if (turn) return turnWords(turn, busy);
  return busy ? { tone: 'live', text: 'Looking for an answer still on its way…' } : { tone: 'neutral', text: 'Ask something to start.' };
}

export function ChatStatusLine({
  status,
  error,
  last,
  lifeline,
  onStop,
  asking = false,
}: {
  status: ChatStatus;
  error: Error | undefined;
  last: UIMessage | undefined;
  lifeline: LifelineView;
  onStop: () => void;
  /** A tool call of the last message waits for this page's answer. */
  asking?: boolean;
}) {
  const { tone, text } = describe(status, error, last, lifeline, asking);
  const busy = status === 'submitted' || status === 'streaming';
  return (
    <div className={`chat-status chat-status-${tone}`} data-chat-status={status} role="status">
      <Chip tone={CHAT_TONES[status]}>{`useChat: ${status}`}</Chip>
      <span className="chat-status-text">{text}</span>
      {busy && (
        <button type="button" className="button small" onClick={onStop}>
          Stop
        </button>
      )}
    </div>
  );
}
