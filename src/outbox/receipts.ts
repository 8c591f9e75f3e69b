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
import { retryDelay, type RetryPolicy } from '../core/backoff.js';
import { thrownFailure, type Failure } from '../core/failure-policy.js';
import { asLifelineError } from '../errors.js';
import { sha256Hex } from '../protocol/integrity.js';
import { sleep } from '../runtime/sleep.js';
import { deadline } from '../runtime/deadline.js';
import { realTimers } from '../ports/timers.js';
import { endpoint, failureFromResponse, type HttpContext } from '../transport/http.js';
import type { NetworkMonitor } from '../ports/network.js';
import { realStorage, type KeyValueStorage } from '../ports/storage.js';
import type { Timers } from '../ports/timers.js';
import type { Diagnostic } from '../types.js';

/** One receipt waiting to land, as stored (key `lifeline-receipt:<namespace>:<turnId>`). */
export interface ReceiptRecord {
  turnId: string;
  seq: number;
  textSha256: string;
  createdAt: number;
  attempts: number;
}

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

const PREFIX = 'lifeline-receipt:';

/** The receipt's Idempotency-Key: the same for every tab and device that followed the turn. */
export async function receiptKey(turnId: string): Promise<string> {
  return `receipt-${(await sha256Hex(`lifeline-receipt:${turnId}`)).slice(0, 40)}`;
}

function parse(value: string | null): ReceiptRecord | undefined {
  if (value === null) return undefined;
  try {
    const record = JSON.parse(value) as Partial<ReceiptRecord>;
    const ok =
      typeof record.turnId === 'string' &&
      Number.isSafeInteger(record.seq) &&
      typeof record.textSha256 === 'string' &&
      typeof record.createdAt === 'number' &&
      typeof record.attempts === 'number';
    return ok ? (record as ReceiptRecord) : undefined;
  } catch {
    return undefined;
  }
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

export function createReceiptQueue(deps: ReceiptDeps): ReceiptQueue {
  // Wall time: a receipt's age counts across reloads, like an outbox entry's.
  const now = (): number => deps.clock.wallNow();
  const storage = deps.storage === undefined ? realStorage.pageStorage() : (deps.storage ?? undefined);
  const name = (turnId: string): string => `${PREFIX}${deps.namespace}:${turnId}`;
  const memory = new Map<string, ReceiptRecord>();
  const sending = new Set<string>();
  const rebuilt = new Set<string>();
  const stop = new AbortController();
  let unsupported = false;
  const emit = (turnId: string, outcome: Extract<Diagnostic, { type: 'receipt' }>['outcome'], extra: Partial<Extract<Diagnostic, { type: 'receipt' }>> = {}): void =>
    deps.emit({ type: 'receipt', at: now(), turnId, outcome, ...extra });

  const read = (turnId: string): ReceiptRecord | undefined => memory.get(turnId) ?? parse(safely(() => storage?.getItem(name(turnId)) ?? null, null));
  const write = (record: ReceiptRecord): void => {
    memory.set(record.turnId, record);
    safely(() => storage?.setItem(name(record.turnId), JSON.stringify(record)), undefined);
  };
  const remove = (turnId: string): void => {
    memory.delete(turnId);
    safely(() => storage?.removeItem(name(turnId)), undefined);
  };

  /** Sends one receipt until it lands, is refused, or ages out; another tab's success ends it too. */
  const send = async (turnId: string): Promise<void> => {
    if (sending.has(turnId) || stop.signal.aborted) return;
    sending.add(turnId);
    try {
      for (;;) {
        const record = read(turnId);
        if (!record || unsupported || stop.signal.aborted) return;
        if (now() - record.createdAt > (deps.maxAgeMs ?? 864e5)) {
          remove(turnId);
          return emit(turnId, 'dropped');
        }
        if (deps.network && !deps.network.online()) await waitOnline(deps.network, stop.signal);
        const outcome = await post(deps, record, stop.signal);
        if (stop.signal.aborted) return;
        if (outcome.kind === 'landed') return remove(turnId), emit(turnId, 'delivered');
        if (outcome.kind === 'mismatch') {
          remove(turnId);
          emit(turnId, 'mismatch');
          // Once: a turn whose rebuilt copy still differs is the server's to explain.
          if (!rebuilt.has(turnId)) {
            rebuilt.add(turnId);
            deps.onMismatch(turnId);
          }
          return;
        }
        if (outcome.kind === 'unsupported') {
          unsupported = true;
          remove(turnId);
          return emit(turnId, 'unsupported');
        }
        const { failure } = outcome;
        if (failure.disposition !== 'retry') return remove(turnId), emit(turnId, 'dropped', { error: failure.error });
        const attempts = record.attempts + 1;
        const delayMs = retryDelay(deps.retry, attempts, deps.random(), failure.retryAfterMs);
        // Still there: another tab may have landed it meanwhile.
        if (read(turnId)) write({ ...record, attempts });
        emit(turnId, 'retry', { delayMs, error: failure.error });
        await sleep(delayMs, stop.signal, deps.timers);
      }
    } finally {
      sending.delete(turnId);
    }
  };

  /** A throw inside a send is a bug of ours, not a network failure: the receipt is dropped, visibly (found by the simulator, seed 230). */
  const launch = (turnId: string): void => {
    send(turnId).catch((bug: unknown) => (remove(turnId), emit(turnId, 'dropped', { error: asLifelineError(bug) })));
  };

  let started = false;
  return {
    add(turnId, seq, text) {
      if (unsupported || stop.signal.aborted || read(turnId)) return;
      void sha256Hex(text).then(
        (textSha256) => {
          if (read(turnId)) return;
          write({ turnId, seq, textSha256, createdAt: now(), attempts: 0 });
          launch(turnId);
        },
        // No Web Crypto (plain HTTP): nothing to prove with.
        () => undefined,
      );
    },
    start() {
      if (started) return;
      started = true;
      const prefix = `${PREFIX}${deps.namespace}:`;
      const stored: string[] = [];
      safely(() => {
        for (let i = 0; storage && i < storage.length; i++) {
          const key = storage.key(i);
          if (key?.startsWith(prefix)) stored.push(key.slice(prefix.length));
        }
      }, undefined);
      for (const turnId of stored) {
        if (read(turnId)) launch(turnId);
        else remove(turnId);
      }
    },
    clear() {
      for (const turnId of [...memory.keys()]) remove(turnId);
      const prefix = `${PREFIX}${deps.namespace}:`;
      const keys: string[] = [];
      safely(() => {
        for (let i = 0; storage && i < storage.length; i++) {
          const key = storage.key(i);
          if (key?.startsWith(prefix)) keys.push(key);
        }
        for (const key of keys) storage?.removeItem(key);
      }, undefined);
    },
    dispose() {
      stop.abort();
    },
  };
}

/** Storage that is full or refused leaves the receipt in memory: best effort, like the outbox journal. */
function safely<T>(step: () => T, fallback: T): T {
  try {
    return step();
  } catch {
    return fallback;
  }
}

function waitOnline(network: NetworkMonitor, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      unsubscribe();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const unsubscribe = network.subscribe((online: boolean) => online && done());
    signal.addEventListener('abort', done, { once: true });
    if (network.online() || signal.aborted) done();
  });
}
