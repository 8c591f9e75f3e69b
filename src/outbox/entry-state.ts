/**
 * The outbox entry's life as pure functions: every state an entry can move to and which
 * entries are due. No storage, no network, no timers.
 *
 *   queued ──attempt──▶ sending ──answer──▶ accepted   (offered to the client, deleted a while later)
 *     ▲                    │
 *     └──retryable, due────┤ (backoff, `Retry-After`)
 *                          └──rejected or past maxAgeMs──▶ failed ──retry()──▶ queued (fresh age, attempts 0)
 *
 * Per conversation, entries go out strictly in `order`: the first `queued`/`sending` entry
 * is the head and nothing behind it is posted until it is accepted or failed. A `failed`
 * entry does not block: it waits for `retry`/`discard` while later ones flow.
 */
import { TransportError, type LifelineError } from '../errors.js';
import type { MessageContent, SubmitAnswer } from '../protocol/schemas.js';
import type { OutboxRecord } from '../storage/store.js';

export const isPending = (entry: OutboxRecord): boolean => entry.state === 'queued' || entry.state === 'sending';

/** What changes as an entry moves on: records read back equal to this are the same entry. */
export const progress = (entry: OutboxRecord): string => [entry.state, entry.attempts, entry.nextAttemptAt, entry.createdAt].join();

/** A new entry, due at once. Ordered by time, so entries from several tabs interleave in time order, and after every entry listed. */
export function newEntry(operationId: string, conversationId: string, content: MessageContent, time: number, listed: readonly OutboxRecord[]): OutboxRecord {
  return {
    operationId,
    conversationId,
    content,
    createdAt: time,
    order: Math.max(time, ...listed.map((entry) => entry.order + 1)),
    attempts: 0,
    nextAttemptAt: time,
    state: 'queued',
  };
}

/** An attempt starts: written before the POST, so a reload knows the entry may have reached the server. */
export const sending = (entry: OutboxRecord): OutboxRecord => ({ ...entry, state: 'sending', attempts: entry.attempts + 1 });

/** The server has it: the link to its turn is kept. */
export function accepted(entry: OutboxRecord, { turnId, messageId }: SubmitAnswer, time: number): OutboxRecord {
  const { lastError: _, ...rest } = entry;
  return { ...rest, state: 'accepted', turnId, messageId, acceptedAt: time };
}

/** Another attempt after `delayMs`, with the same key. */
export const requeued = (entry: OutboxRecord, error: LifelineError, at: number): OutboxRecord => ({ ...entry, state: 'queued', nextAttemptAt: at, lastError: error.toJSON() });

export const failed = (entry: OutboxRecord, error: LifelineError): OutboxRecord => ({ ...entry, state: 'failed', lastError: error.toJSON() });

/**
 * `retry(id)`: a failed entry starts over as if just created (its age and attempts reset,
 * its key and position kept); a queued one waiting out a backoff goes at once. Others: unchanged (`undefined`).
 */
export function rearmed(entry: OutboxRecord | undefined, time: number): OutboxRecord | undefined {
  if (entry?.state !== 'failed' && entry?.state !== 'queued') return;
  const { lastError: _, ...rest } = entry;
  return { ...rest, state: 'queued', nextAttemptAt: time, ...(entry.state === 'failed' && { createdAt: time, attempts: 0 }) };
}

/** The give-up error of an entry past `maxAgeMs`, with the last error's status and server code. */
export const expiredError = (entry: OutboxRecord, cause?: LifelineError): LifelineError =>
  new TransportError('retry_exhausted', 'Not accepted within maxAgeMs.', { ...(cause?.toJSON() ?? entry.lastError), cause });

/** What the sender does now, and when it looks again. */
export interface SendPlan {
  /** Pending entries past `maxAgeMs`: they fail now. */
  expired: OutboxRecord[];
  /** Conversation heads to post now. */
  due: OutboxRecord[];
  /** When something is next due (a backoff or an age limit), monotonic ms; `Infinity`: nothing. */
  wakeAt: number;
}

export interface PlanContext {
  /** Monotonic ms, like the two below. */
  time: number;
  /** When the entry is next due (outbox/schedule.ts). */
  dueAt(entry: OutboxRecord): number;
  /** When the entry passes its age limit. */
  deadline(entry: OutboxRecord): number;
  /** Entries with a request in flight in this tab. */
  busy: (operationId: string) => boolean;
  online: boolean;
  /** Back online: every head goes now, backoff or not. */
  hurry: boolean;
}

/** Which entries fail, which heads are posted now, and when to look again. */
export function planSends(list: readonly OutboxRecord[], { time, dueAt, deadline: deadlineOf, busy, online, hurry }: PlanContext): SendPlan {
  const plan: SendPlan = { expired: [], due: [], wakeAt: Infinity };
  const heads = new Set<string>();
  for (const entry of list) {
    if (!isPending(entry)) continue;
    const deadline = deadlineOf(entry);
    const free = !busy(entry.operationId);
    // Checked for every pending entry, head or not, so a stuck queue fails visibly.
    if (free && time >= deadline) {
      plan.expired.push(entry);
      continue;
    }
    plan.wakeAt = Math.min(plan.wakeAt, deadline);
    // The first pending entry of a conversation is its head; nothing behind it goes.
    if (heads.has(entry.conversationId)) continue;
    heads.add(entry.conversationId);
    if (!free || !online) continue;
    const due = dueAt(entry);
    if (due > time && !hurry) plan.wakeAt = Math.min(plan.wakeAt, due);
    else plan.due.push(entry);
  }
  return plan;
}
