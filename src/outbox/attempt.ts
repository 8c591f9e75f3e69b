/**
 * One attempt of the sending tab: marks the entry `sending` (in storage before the POST),
 * posts it, and moves it on by the result: accepted, queued again after a backoff with the
 * same key, or failed (rejected, or no retry fits before its age limit).
 */
import { backoffStep, type RetryPolicy } from '../core/backoff.js';
import type { LifelineError } from '../errors.js';
import type { OutboxRecord } from '../storage/store.js';
import type { Timers } from '../ports/timers.js';
import type { HttpContext } from '../transport/http.js';
import { accepted, expiredError, failed, requeued, sending } from './entry-state.js';
import type { Ledger } from './ledger.js';
import type { Schedule } from './schedule.js';
import { submit } from './submit.js';
import type { Emit } from './types.js';

/** What an attempt needs: the client's request plumbing and the outbox's settings and parts. */
export interface AttemptContext extends HttpContext {
  ledger: Ledger;
  /** Requests in flight, by operation id; an entry forgotten meanwhile aborts its own. */
  busy: Map<string, AbortController>;
  retry: RetryPolicy;
  timeoutMs: number;
  maxAgeMs: number;
  random: () => number;
  timers: Timers;
  /** The entries' due times and age limits on the monotonic clock. */
  schedule: Schedule;
  emit: Emit;
  /** The headers an entry's own send asked for; in this page's memory only (never stored: they may hold credentials). */
  headersOf: (operationId: string) => Record<string, string> | undefined;
}

/** Gives an entry up, visibly. */
export function fail({ ledger, emit }: Pick<AttemptContext, 'ledger' | 'emit'>, entry: OutboxRecord, error: LifelineError): void {
  emit({ type: 'failed', scope: 'submit', id: entry.operationId, error });
  void ledger.save(failed(entry, error));
}

/** Posts `entry` once and saves what came of it; resolves once decided (or abandoned: the entry was forgotten). */
export async function attempt(context: AttemptContext, entry: OutboxRecord): Promise<void> {
  const { ledger, busy, emit } = context;
  const { operationId } = entry;
  const abort = new AbortController();
  busy.set(operationId, abort);
  try {
    const current = sending(entry);
    await ledger.save(current);
    if (abort.signal.aborted) return;
    emit({ type: 'submit', operationId, conversationId: entry.conversationId, attempt: current.attempts });
    const result = await submit(context, current, abort.signal, context.timeoutMs, context.timers, context.headersOf(operationId));
    // Discarded, cleared or disposed meanwhile.
    if (abort.signal.aborted) return;
    // Stored as information (wall); the retry's wait and the age limit are monotonic (schedule.ts).
    const time = context.clock.wallNow();
    if (result.ok) {
      emit({ type: 'accepted', operationId, turnId: result.answer.turnId, replayed: result.replayed });
      void ledger.save(accepted(current, result.answer, time));
      return;
    }
    const { error, disposition } = result.failure;
    // The follower's retry step (core/backoff.ts) over what the record keeps: the failures
    // before this one, and the entry's age limit for the budget's end (on this page's clock,
    // schedule.ts), counted from its creation rather than its first failure. What stays the
    // outbox's own is the loop: the wait is stored (`nextAttemptAt`) so that it survives a
    // reload, and one sender loop (sender.ts) sleeps until the first entry is due instead of
    // one sleeping request per entry. No retry lands past the age limit: it fails now instead.
    const before = current.attempts - 1;
    const { delay } = backoffStep(context.retry, { attempt: before, step: before, deadline: context.schedule.deadline(current) }, result.failure, context.clock.now(), context.random());
    if (disposition === 'retry' && delay !== undefined) {
      emit({ type: 'retry', scope: 'submit', id: operationId, attempt: current.attempts + 1, delayMs: delay, cause: error });
      void ledger.save(requeued(current, error, time + delay));
    } else fail(context, current, disposition === 'retry' ? expiredError(current, error) : error);
  } finally {
    busy.delete(operationId);
  }
}
