/** What the bench server tells a throughput page. */
export interface ThroughputConfig {
  /** The pre-rendered turn as a plain SSE resource (baselines). */
  sseUrl: string;
  /** Lifeline's base URL (the same bytes behind the protocol's path). */
  baseUrl: string;
  turnId: string;
  events: number;
  textLength: number;
  textSha256: string;
  /** Lifeline: the flush options under test, when not the defaults. */
  flushMs?: number;
  flushEvents?: number;
}
