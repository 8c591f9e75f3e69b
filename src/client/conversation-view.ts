/**
 * `client.conversation(id)`: send into one conversation and read its interleaved items,
 * each user message before the turn it started, pending ones last.
 */
import { LifelineError } from '../errors.js';
import type { MessageContent } from '../protocol/schemas.js';
import type { OutboxController } from '../outbox/outbox.js';
import { createOutboxView, filteredStore, isUnaccepted, type SubmissionTracker } from '../outbox/views.js';
import type { Persistence } from '../storage/persistence.js';
import type { Conversation, ConversationItem, ConversationSnapshot, ExternalStore, OutboxEntry, SendOptions, Submission, TurnSnapshot } from '../types.js';

export interface ConversationSources {
  outbox: OutboxController;
  submissions: SubmissionTracker;
  persistence: Pick<Persistence, 'message'>;
  turns: ExternalStore<readonly TurnSnapshot[]>;
  /** Throws once the client is disposed. */
  assertUsable: () => void;
}

export function createConversationView(id: string, ready: Promise<void>, { outbox, submissions, persistence, turns, assertUsable }: ConversationSources): Conversation {
  // This conversation's entries, accepted ones included (they link a message to its turn).
  const entries = filteredStore(outbox.entries, (entry) => entry.conversationId === id);
  const send = (content: MessageContent, options?: SendOptions): Submission => {
    assertUsable();
    return submissions.track(outbox.enqueue(id, content, options).operationId);
  };
  let snapshot: ConversationSnapshot = Object.freeze({ id, items: Object.freeze([]) });
  let sources: unknown[] = [];
  return {
    id,
    ready,
    outbox: createOutboxView(outbox, (entry) => entry.conversationId === id && isUnaccepted(entry)),
    send,
    resend(turnId) {
      // The message is stored with its turn's row: the outbox forgets accepted entries.
      const message = persistence.message(turnId);
      if (!message) throw new LifelineError('invalid_argument', 'No stored message started this turn.');
      return send(message.content);
    },
    getSnapshot() {
      const listed = turns.getSnapshot();
      const pending = entries.getSnapshot();
      if (sources[0] === listed && sources[1] === pending) return snapshot;
      sources = [listed, pending];
      const items = interleave(id, listed, pending, persistence);
      // Same items, same snapshot: a change to another conversation's turn is not ours.
      const old = snapshot.items;
      if (items.length !== old.length || items.some((item, i) => item.key !== old[i]!.key || item.turn !== old[i]!.turn || item.submission !== old[i]!.submission)) {
        snapshot = Object.freeze({ id, items: Object.freeze(items) });
      }
      return snapshot;
    },
    subscribe(listener) {
      const stops = [turns.subscribe(listener), entries.subscribe(listener)];
      return () => stops.forEach((stop) => stop());
    },
  };
}

/** The conversation's items: each turn after the user message that started it, then the submissions no turn answers yet. */
function interleave(id: string, turns: readonly TurnSnapshot[], pending: readonly OutboxEntry[], persistence: Pick<Persistence, 'message'>): ConversationItem[] {
  const items: ConversationItem[] = [];
  const placed = new Set<string>();
  for (const turn of turns) {
    if (turn.conversationId !== id) continue;
    const user = persistence.message(turn.id);
    if (user) {
      const submission = pending.find((entry) => entry.turnId === turn.id);
      // A row without the operation id still gets a key of its own (':' is in no id).
      const key = user.operationId ?? `${turn.id}:user`;
      items.push({ role: 'user', key, content: user.content, ...(submission && { submission }) });
      placed.add(key);
    }
    items.push({ role: 'assistant', key: turn.id, turn });
  }
  for (const submission of pending) {
    if (!placed.has(submission.operationId)) items.push({ role: 'user', key: submission.operationId, content: submission.content, submission });
  }
  return items;
}
