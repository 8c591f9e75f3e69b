/**
 * Which turn of a chat is its newest, by the server's order (docs/protocol.md section 4 lists
 * turns newest first), for `reconnectToStream` and `cancel(chatId)`. Every wait here honours
 * the caller's abort signal: an aborted lookup settles at once and keeps no subscription.
 */
import { isEnded } from '../core/domain.js';
import { realTimers, type TimerHandle } from '../ports/timers.js';
import type { LifelineClient, TurnSnapshot } from '../types.js';

export const isLive = (turn: TurnSnapshot): boolean => !isEnded(turn.status);

/** `promise`'s value, or `undefined` as soon as `signal` aborts (at once when it has). */
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const aborted = (): void => resolve(undefined);
    signal.addEventListener('abort', aborted, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
  });
}

/**
 * The chat's turn ids in the server's order, oldest first; none when the list fails, takes
 * longer than `timeoutMs`, or `signal` aborts (the list still lands in the client when it comes).
 */
export async function listedOrder(client: LifelineClient, chatId: string, timeoutMs: number, report: (error: unknown) => void, signal?: AbortSignal): Promise<string[]> {
  let order: string[] = [];
  let timer: TimerHandle | undefined;
  const listed = client.recover(chatId).then(
    (turns) => (order = turns.map((turn) => turn.id).reverse()),
    report,
  );
  await unlessAborted(Promise.race([listed, new Promise((resolve) => (timer = realTimers.set(() => resolve(undefined), timeoutMs)))]), signal);
  realTimers.clear(timer);
  return order;
}

/**
 * `turns` (one chat's, in this client's order) oldest first by the server's `order`. A turn
 * the server did not list is either gone from it (ended long ago: first) or accepted after the
 * list was read (still live: last).
 */
export function serverOrdered(turns: readonly TurnSnapshot[], order: readonly string[]): TurnSnapshot[] {
  const rank = new Map(order.map((id, i) => [id, i]));
  const place = (turn: TurnSnapshot): number => rank.get(turn.id) ?? (isLive(turn) ? order.length : -1);
  // Array.prototype.sort is stable: equal places keep this client's order.
  return [...turns].sort((a, b) => place(a) - place(b));
}

/**
 * The turn of the chat's last message when that message is still on its way (sent by an
 * earlier page, or by another tab, and not accepted yet): resolves once the server accepted
 * it, with `undefined` if it fails, is withdrawn, or `signal` aborts (the subscription ends
 * then too). `undefined` at once when the last message is answered or refused already.
 */
export function unanswered(client: LifelineClient, chatId: string, signal: AbortSignal | undefined): Promise<string | undefined> | undefined {
  const conversation = client.conversation(chatId);
  const last = conversation.getSnapshot().items.at(-1);
  if (last?.role !== 'user' || last.submission === undefined || last.submission.state === 'failed') return undefined;
  return new Promise((resolve) => {
    const finish = (turnId: string | undefined): void => {
      stop();
      signal?.removeEventListener('abort', aborted);
      resolve(turnId);
    };
    const aborted = (): void => finish(undefined);
    const check = (): void => {
      const items = conversation.getSnapshot().items;
      const at = items.findIndex((item) => item.key === last.key);
      const answer = items[at + 1]?.turn;
      if (at !== -1 && !answer && items[at]?.submission?.state !== 'failed') return;
      finish(at === -1 ? undefined : answer?.id);
    };
    const stop = conversation.subscribe(check);
    signal?.addEventListener('abort', aborted, { once: true });
    if (signal?.aborted) return aborted();
    check();
  });
}
