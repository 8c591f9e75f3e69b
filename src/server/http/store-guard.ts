import type { TurnLog } from '../log/turn-log.js';
import type { ServerErrorReporter } from '../producer/producer.js';
import { HttpError } from './responses.js';

/**
 * How long a route waits on one turn-log call before answering `503 unavailable`, ms.
 * A client's own request timeout is longer, so it always hears "try again" rather than
 * nothing (docs/faults.md #51).
 */
export const DEFAULT_STORE_TIMEOUT_MS = 2000;

/** What a route answers when the turn log failed or did not answer in time. */
export function storeUnavailable(): HttpError {
  return new HttpError(503, 'unavailable', 'The turn log is not reachable right now; try again shortly.', { 'retry-after': '1' });
}

/** `call`, or a `503 unavailable` (the cause reported) when it fails or takes longer than `timeoutMs`. */
async function guarded<T>(call: () => Promise<T>, timeoutMs: number, report: ServerErrorReporter): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`The turn log did not answer within ${timeoutMs} ms.`)), timeoutMs);
  });
  try {
    return await Promise.race([call(), late]);
  } catch (cause) {
    report(cause, { phase: 'store' });
    throw storeUnavailable();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The log as the routes see it: every call that answers a request is bounded by
 * `timeoutMs`, and any failure is the typed `503` (with `Retry-After`) a client's outbox
 * retries, never a `500` after a client library's own minute of retries. Waiting for
 * events (a follow stream's idle wait) and closing are passed through unbounded. The
 * producer uses the log itself: an append may take its time through a failover.
 * A call that timed out may still land later; the idempotency ledger makes the
 * client's retry of a submission safe.
 */
export function guardStore(log: TurnLog, timeoutMs: number, report: ServerErrorReporter): TurnLog {
  const bound =
    <A extends unknown[], T>(call: (...args: A) => Promise<T>) =>
    (...args: A): Promise<T> =>
      guarded(() => call(...args), timeoutMs, report);
  const view: TurnLog = {
    createTurn: bound((turn) => log.createTurn(turn)),
    getTurn: bound((turnId) => log.getTurn(turnId)),
    append: bound((turnId, event) => log.append(turnId, event)),
    read: bound((turnId, after, limit, maxBytes) => log.read(turnId, after, limit, maxBytes)),
    waitForEvents: (turnId, after, options) => log.waitForEvents(turnId, after, options),
    listTurns: bound((conversationId, principal, limit) => log.listTurns(conversationId, principal, limit)),
    getIdempotency: bound((principal, key) => log.getIdempotency(principal, key)),
    putIdempotencyIfAbsent: bound((principal, key, record) => log.putIdempotencyIfAbsent(principal, key, record)),
    completeIdempotency: bound((principal, key, record) => log.completeIdempotency(principal, key, record)),
    deleteIdempotency: bound((principal, key) => log.deleteIdempotency(principal, key)),
    requestCancel: bound((turnId) => log.requestCancel(turnId)),
    isCancelRequested: bound((turnId) => log.isCancelRequested(turnId)),
    ping: bound(() => log.ping?.() ?? Promise.resolve()),
    close: () => log.close(),
  };
  const release = log.release?.bind(log);
  if (release) view.release = bound((turnId: string) => release(turnId));
  // Receipts and the operator API (sections 10, 11): passed on only where the log has them.
  if (log.recordDelivery) view.recordDelivery = bound((turnId, receipt, at) => log.recordDelivery!(turnId, receipt, at));
  if (log.listOperatorTurns) view.listOperatorTurns = bound((query) => log.listOperatorTurns!(query));
  if (log.requestStop) view.requestStop = bound((turnId, stop) => log.requestStop!(turnId, stop));
  if (log.stopRequest) view.stopRequest = bound((turnId) => log.stopRequest!(turnId));
  return view;
}
