/** What `createLifeline` takes: the options and their defaults. Re-exported by `types.ts`. */
import type { RetryOptions } from './core/backoff.js';
import type { Diagnostic } from './diagnostics.js';
import type { Ports } from './ports/index.js';
import type { Store } from './storage/store.js';

/** Stall watchdogs (see the stall issue). */
export interface StallOptions {
  /** From acceptance (or attach) to the first event, ms. Default 15 000. */
  firstEventMs?: number;
  /** Between any two events or heartbeats, ms. Default 25 000. */
  idleMs?: number;
}

/** Size caps on untrusted input. */
export interface LimitOptions {
  /** Largest single event's data, code units. Default 1 Mi. */
  maxEventSize?: number;
  /** Largest text of one turn, code units. Default 16 Mi. */
  maxTurnTextLength?: number;
}

export type HeadersInput = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

export interface LifelineOptions {
  /** Base URL of the protocol endpoints, e.g. `/api` or `https://host/api`. */
  baseUrl: string;
  /** Request headers (e.g. Authorization); a function is called again before every attempt. Never stored. Default: none. */
  headers?: HeadersInput;
  /** Injectable fetch. Default the http port's (`globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Reconnect, replay and submit retry timing; each field's default is on {@link RetryOptions}. */
  retry?: RetryOptions;
  /** Stall watchdogs; each field's default is on {@link StallOptions}. */
  stall?: StallOptions;
  /** Size caps on what the network sends; each field's default is on {@link LimitOptions}. */
  limits?: LimitOptions;
  /** `'indexeddb'` (default when available), `'memory'`, or a custom {@link Store}. */
  storage?: 'indexeddb' | 'memory' | Store;
  /** Partition of local data, e.g. the user id: one database per namespace. Default `'default'`. */
  namespace?: string;
  /** Ask the browser for persistent storage (`navigator.storage.persist()`); the answer is a diagnostic. Default `false`. */
  persist?: boolean;
  /** Ended turns are deleted from local storage after this long, ms. Default 7 days. */
  retentionMs?: number;
  /** Flush buffered events after this many ms or {@link flushEvents} events, whichever first. Default 16. */
  flushMs?: number;
  /** Default 256. */
  flushEvents?: number;
  /** Submission timeouts; each field's default is on {@link OutboxOptions}. */
  outbox?: OutboxOptions;
  /** Delivery receipts (docs/protocol.md section 10); each field's default is on {@link ReceiptOptions}. */
  receipts?: ReceiptOptions;
  /** Receives every diagnostic (also available as `client.diagnostics`). Default: none. */
  onDiagnostic?: (diagnostic: Diagnostic) => void;
  /**
   * For tests and simulators: the platform the client talks to (clock, timers, http,
   * storage, tabs, random, network, page; see src/ports/index.ts). Every port left out is
   * the real one. Default: all real.
   */
  ports?: Partial<Ports>;
}

export interface OutboxOptions {
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** Give up on an entry this long after it was created, ms. Default 24 h. */
  maxAgeMs?: number;
}

export interface ReceiptOptions {
  /** Send a receipt for every turn followed to a verified end. Default true. */
  enabled?: boolean;
  /** Per-request timeout, ms. Default 15 000. */
  timeoutMs?: number;
  /** Give up on a receipt this long after the turn ended, ms. Default 24 h. */
  maxAgeMs?: number;
}

