/**
 * The sending tab's loop. One tab sends (tabs/leadership.ts: a Web Lock, else a lease in
 * storage), and only while entries are pending. Its single loop posts each conversation's
 * due head and sleeps until the next due time or change. Duplicate sending (a frozen lease
 * holder waking up) is harmless: every attempt of an entry carries the same key.
 */
import { sleep } from '../runtime/sleep.js';
import { lead, type LeadOptions } from '../tabs/leadership.js';
import { attempt, fail, type AttemptContext } from './attempt.js';
import { expiredError, isPending, planSends } from './entry-state.js';

export interface SenderDeps extends AttemptContext {
  /** The lock and lease name. */
  name: string;
  /** How to lead; its signal aborts on dispose (stops waiting, sending and sleeping). */
  leadership: LeadOptions;
  online: boolean;
}

export interface Sender {
  /** Lets the sender look again: wakes its loop, or asks for the sender role while entries are pending. */
  poke(): void;
  /** The network came or went; back online, every head goes at once, backoff or not. */
  setOnline(online: boolean): void;
}

export function createSender(deps: SenderDeps): Sender {
  const { ledger, busy, leadership } = deps;
  let { online } = deps;
  let hurry = false;
  let leading = false;
  /** Ends the loop's current sleep. */
  let wake: (() => void) | undefined;

  /** Fails entries past their age, posts every due head; answers when something is next due. */
  const pump = (): number => {
    const list = ledger.list();
    deps.schedule.keep(list);
    const plan = planSends(list, { time: deps.clock.now(), dueAt: deps.schedule.dueAt, deadline: deps.schedule.deadline, busy: (id) => busy.has(id), online, hurry });
    hurry = false;
    for (const entry of plan.expired) fail(deps, entry, expiredError(entry));
    for (const entry of plan.due) void attempt(deps, entry).finally(poke);
    return plan.wakeAt;
  };

  /** Runs while entries are pending and this tab leads. */
  const drain = async (signal: AbortSignal): Promise<void> => {
    // Another tab may have sent or changed entries while this one waited.
    await ledger.reload();
    while (!signal.aborted && ledger.list().some(isPending)) {
      const wakeAt = pump();
      const woken = new AbortController();
      wake = () => woken.abort();
      await sleep(wakeAt - deps.clock.now(), AbortSignal.any([signal, woken.signal]), deps.timers);
      wake = undefined;
    }
  };

  const poke = (): void => {
    if (wake) return wake();
    if (leading || leadership.signal.aborted || !ledger.list().some(isPending)) return;
    leading = true;
    void lead(deps.name, leadership, drain).finally(() => {
      leading = false;
      // Work may have arrived while stepping down.
      poke();
    });
  };

  return {
    poke,
    setOnline(next) {
      hurry = online = next;
      poke();
    },
  };
}
