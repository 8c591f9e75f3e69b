/**
 * The state of one run below its shared turns: settings, unique ids and the error answers
 * seen so far (the turn fixtures are built on it; run-context.ts adds them).
 */
import type { CheckResult } from './check.js';
import type { Answer, HttpSettings } from './http.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** The protocol's base URL, e.g. `https://chat.example.com/api`. */
  baseUrl: string;
  /** Sections (`s2`) or check ids (`s2.seq-contiguous`) to run. Default: every check. */
  only?: readonly string[];
  /** Headers sent on every request, e.g. `{ authorization: 'Bearer …' }`. */
  headers?: Record<string, string>;
  /** The operator's credentials, sent on operator API requests (section 11). Without them section 11 is skipped. */
  operatorHeaders?: Record<string, string>;
  /** Longest wait for one answer (headers and body of a JSON answer), ms. Default 10 000. */
  timeoutMs?: number;
  /** Longest wait for a turn to end once followed, ms. Default 30 000. */
  turnTimeoutMs?: number;
  /**
   * The quiet pause the conformance agent is asked to hold, during which heartbeats must
   * arrive, ms. Default 2.5 × the announced heartbeat interval (`Lifeline-Heartbeat`).
   */
  pauseMs?: number;
  /** How much longer than the announced heartbeat interval a silence may last, ms. Default max(1000, interval). */
  slackMs?: number;
  /** How long the turn to be cancelled stays live unless cancelled, ms. Default 30 000. */
  holdMs?: number;
  /** Called with each result as soon as its check has run. */
  onResult?: (result: CheckResult) => void;
}

/** What the turn fixtures, and through RunContext every check, get. */
export interface BaseContext {
  readonly http: HttpSettings;
  readonly options: Readonly<ResolvedOptions>;
  /** A conversation id unique to this run and `name`. */
  conversationId(name: string): string;
  /** A fresh valid Idempotency-Key unique to this run. */
  newKey(): string;
  /** Every answer with status ≥ 400 so far. */
  readonly errorAnswers: readonly Answer[];
}

export interface ResolvedOptions {
  timeoutMs: number;
  turnTimeoutMs: number;
  pauseMs: number | undefined;
  slackMs: number | undefined;
  holdMs: number;
  runId: string;
  operatorHeaders: Record<string, string> | undefined;
}

/** Builds the context of one run, its shared turns aside. */
export function createBaseContext(options: ConformanceOptions): BaseContext {
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  const errorAnswers: Answer[] = [];
  const http: HttpSettings = {
    baseUrl: options.baseUrl,
    headers: options.headers ?? {},
    timeoutMs: options.timeoutMs ?? 10_000,
    onErrorAnswer: (answer) => errorAnswers.push(answer),
  };
  const resolved: ResolvedOptions = {
    timeoutMs: http.timeoutMs,
    turnTimeoutMs: options.turnTimeoutMs ?? 30_000,
    pauseMs: options.pauseMs,
    slackMs: options.slackMs,
    holdMs: options.holdMs ?? 30_000,
    runId,
    operatorHeaders: options.operatorHeaders,
  };
  let keys = 0;
  return {
    http,
    options: resolved,
    conversationId: (name) => `conf-${runId}-${name}`,
    newKey: () => `conformance-${runId}-${++keys}`,
    errorAnswers,
  };
}
