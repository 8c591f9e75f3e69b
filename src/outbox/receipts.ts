/**
 * Delivery receipts (docs/protocol.md section 10): once a followed turn's `turn.end` is
 * applied and verified, the client tells the server it holds the whole answer, with
 * `POST /turns/{id}/delivered` `{seq, textSha256}`.
 *
 * The receipt goes through the outbox's durable path, not through the submission queue
 * (a receipt orders after nothing and blocks nothing): it is written synchronously to
 * `localStorage` (the outbox journal's store; one key per turn, so tabs never overwrite
 * each other's) before the first attempt, retried with the outbox's backoff on network
 * errors, timeouts, 408, 425, 429 and 5xx, and deleted once the server answered. A
 * reload, an offline spell or a server outage only delay it: the next page's `start()`
 * sends what earlier pages left. Its Idempotency-Key is derived from the turn id, so every
 * tab and device sends the same key, and the server records one delivery per turn.
 *
 * A 1.1 server answers the route `404 not_found`: the receipt ends there, one diagnostic
 * for the client's life, and no receipt is attempted again. A `409 delivery_mismatch`
 * asks the client to rebuild the turn from a full replay (`onMismatch`), once per turn.
 */
import { backoffStep, type RetryPolicy } from '../core/backoff.js';
import { thrownFailure, type Failure } from '../core/failure-policy.js';
import { asLifelineError } from '../errors.js';
import { sha256Hex } from '../protocol/integrity.js';
import { onAbort } from '../runtime/on-abort.js';
import { sleep } from '../runtime/sleep.js';
import { deadline } from '../runtime/deadline.js';
import { realTimers } from '../ports/timers.js';
import { endpoint, failureFromResponse, type HttpContext } from '../transport/http.js';
import type { NetworkMonitor } from '../ports/network.js';
import { realStorage, type KeyValueStorage } from '../ports/storage.js';
import { createReceiptStore, type ReceiptRecord, type ReceiptStore } from './receipt-store.js';
import type { Timers } from '../ports/timers.js';
import type { Diagnostic } from '../types.js';


export type { ReceiptRecord } from './receipt-store.js';

export interface ReceiptDeps extends HttpContext {
  namespace: string;
  retry: RetryPolicy;
  random: () => number;
  network: NetworkMonitor | null;
  emit: (diagnostic: Diagnostic) => void;
  /** A verified turn the server says differs: rebuild it from a full replay. */
  onMismatch: (turnId: string) => void;
  /** Default `localStorage` when the page may use it; `null`: receipts live in memory only. */
  storage?: KeyValueStorage | null;
  timers?: Timers;
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** A receipt not landed this long after it was written is dropped, ms. Default 24 h (the reference retention). */
  maxAgeMs?: number;
}

export interface ReceiptQueue {
  /** A followed turn ended and its text was verified: its receipt is stored, then sent. Idempotent per turn. */
  add(turnId: string, seq: number, text: string): void;
  /** Sends what earlier pages left. Idempotent. */
  start(): void;
  /** Forgets every stored receipt (logout). */
  clear(): void;
  /** Stops sending; stored receipts wait for the next page. */
  dispose(): void;
}

/** The receipt's Idempotency-Key: the same for every tab and device that followed the turn. */
export async function receiptKey(turnId: string): Promise<string> {
  return `receipt-${(await sha256Hex(`lifeline-receipt:${turnId}`)).slice(0, 40)}`;
}


/** What one POST came to. */
type Outcome = { kind: 'landed' } | { kind: 'mismatch' } | { kind: 'unsupported' } | { kind: 'failed'; failure: Failure };

async function post(deps: ReceiptDeps, record: ReceiptRecord, signal: AbortSignal): Promise<Outcome> {
  const limit = deadline(deps.timers ?? realTimers, deps.timeoutMs ?? 15_000, signal);
  const bounded = limit.signal;
  try {
    const headers = new Headers(await deps.headers());
    headers.set('content-type', 'application/json');
    headers.set('idempotency-key', await receiptKey(record.turnId));
    const response = await deps.fetch(endpoint(deps.baseUrl, `/turns/${record.turnId}/delivered`), {
      method: 'POST',
      headers,
      body: JSON.stringify({ seq: record.seq, textSha256: record.textSha256 }),
      signal: bounded,
    });
    if (response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return { kind: 'landed' };
    }
    const failure = await failureFromResponse(response, deps.clock.wallNow(), 'read');
    const code = failure.error.serverCode;
    if (response.status === 409 && code === 'delivery_mismatch') return { kind: 'mismatch' };
    // A 1.1 server has no such route (its 404 names no turn).
    if (response.status === 404 && code !== 'turn_not_found' && code !== 'turn_expired') return { kind: 'unsupported' };
    return { kind: 'failed', failure };
  } catch (cause) {
    return { kind: 'failed', failure: thrownFailure(cause) };
  } finally {
    limit.clear();
  }
}


type ReceiptDiagnostic = Extract<Diagnostic, { type: 'receipt' }>;

/** What the sending half of the queue shares with it. */
interface SendContext {
  deps: ReceiptDeps;
  store: ReceiptStore;
  signal: AbortSignal;
  emit(turnId: string, outcome: ReceiptDiagnostic['outcome'], extra?: Partial<ReceiptDiagnostic>): void;
  /** Forgets the receipt and says how it ended. */
  drop(turnId: string, outcome: 'delivered' | 'dropped' | 'mismatch' | 'unsupported', extra?: Partial<ReceiptDiagnostic>): void;
}

/** Sends receipts, one loop per turn at a time, until each lands, is refused or ages out. */
function createReceiptSender({ deps, store, signal, emit, drop }: SendContext) {
  const sending = new Set<string>();
  const rebuilt = new Set<string>();
  const state = { unsupported: false };
  const maxAgeMs = deps.maxAgeMs ?? 864e5;

  /** Ends the receipt on what the server answered; answers the failure worth retrying, if that is what it was. */
  const conclude = (turnId: string, outcome: Outcome): Failure | void => {
    switch (outcome.kind) {
      case 'landed':
        return drop(turnId, 'delivered');
      case 'mismatch':
        drop(turnId, 'mismatch');
        // Once: a turn whose rebuilt copy still differs is the server's to explain.
        if (!rebuilt.has(turnId)) {
          rebuilt.add(turnId);
          deps.onMismatch(turnId);
        }
        return;
      case 'unsupported':
        state.unsupported = true;
        return drop(turnId, 'unsupported');
      case 'failed':
        if (outcome.failure.disposition === 'retry') return outcome.failure;
        return drop(turnId, 'dropped', { error: outcome.failure.error });
    }
  };

  /**
   * Waits the backoff of the receipt's next attempt: the follower's retry step over the count
   * in its record, its age limit for the budget's end (on the wall clock, like the age check
   * in `send`). False: no retry lands within that age, so the receipt is dropped now.
   */
  const backOff = async (record: ReceiptRecord, failure: Failure): Promise<boolean> => {
    const { attempts, createdAt } = record;
    const { delay } = backoffStep(deps.retry, { attempt: attempts, step: attempts, deadline: createdAt + maxAgeMs }, failure, deps.clock.wallNow(), deps.random());
    if (delay === undefined) return false;
    // Still there: another tab may have landed it meanwhile.
    if (store.read(record.turnId)) store.write({ ...record, attempts: attempts + 1 });
    emit(record.turnId, 'retry', { delayMs: delay, error: failure.error });
    await sleep(delay, signal, deps.timers);
    return true;
  };

  /** Another tab's success ends the loop too: it re-reads the record before every attempt. */
  const send = async (turnId: string): Promise<void> => {
    if (sending.has(turnId) || signal.aborted) return;
    sending.add(turnId);
    try {
      for (;;) {
        const record = store.read(turnId);
        if (!record || state.unsupported || signal.aborted) return;
        if (deps.clock.wallNow() - record.createdAt > maxAgeMs) return drop(turnId, 'dropped');
        if (deps.network && !deps.network.online()) await waitOnline(deps.network, signal);
        const outcome = await post(deps, record, signal);
        if (signal.aborted) return;
        const failure = conclude(turnId, outcome);
        if (!failure) return;
        if (!(await backOff(record, failure))) return drop(turnId, 'dropped');
      }
    } finally {
      sending.delete(turnId);
    }
  };

  return {
    /** The server has no receipts route (a 1.1 server): none is attempted again. */
    get unsupported(): boolean {
      return state.unsupported;
    },
    /** A throw inside a send is a bug of ours, not a network failure: the receipt is dropped, visibly (found by the simulator, seed 230). */
    launch(turnId: string): void {
      send(turnId).catch((bug: unknown) => drop(turnId, 'dropped', { error: asLifelineError(bug) }));
    },
  };
}

export function createReceiptQueue(deps: ReceiptDeps): ReceiptQueue {
  // Wall time: a receipt's age counts across reloads, like an outbox entry's.
  const now = (): number => deps.clock.wallNow();
  const store = createReceiptStore(deps.storage === undefined ? realStorage.pageStorage() : (deps.storage ?? undefined), deps.namespace);
  const stop = new AbortController();
  let started = false;
  const emit: SendContext['emit'] = (turnId, outcome, extra = {}) => deps.emit({ type: 'receipt', at: now(), turnId, outcome, ...extra });
  const sender = createReceiptSender({
    deps,
    store,
    signal: stop.signal,
    emit,
    drop(turnId, outcome, extra) {
      store.remove(turnId);
      emit(turnId, outcome, extra);
    },
  });

  return {
    add(turnId, seq, text) {
      if (sender.unsupported || stop.signal.aborted || store.read(turnId)) return;
      void sha256Hex(text).then(
        (textSha256) => {
          if (store.read(turnId)) return;
          store.write({ turnId, seq, textSha256, createdAt: now(), attempts: 0 });
          sender.launch(turnId);
        },
        // No Web Crypto (plain HTTP): nothing to prove with.
        () => undefined,
      );
    },
    start() {
      if (started) return;
      started = true;
      for (const turnId of store.storedIds()) {
        if (store.read(turnId)) sender.launch(turnId);
        else store.remove(turnId);
      }
    },
    clear: () => store.clear(),
    dispose: () => stop.abort(),
  };
}


function waitOnline(network: NetworkMonitor, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      unsubscribe();
      stopWaiting();
      resolve();
    };
    const stopWaiting = onAbort(signal, done);
    const unsubscribe = network.subscribe((online: boolean) => online && done());
    if (network.online()) done();
  });
}
