/**
 * Everything the client reports, typed: the diagnostics channel (`client.diagnostics`,
 * `onDiagnostic`), and the storage health and drills it reports on. Re-exported by `types.ts`.
 */
import type { EndedTurnStatus } from './core/domain.js';
import type { LifelineError } from './errors.js';

/** How a turn's missing events were brought back. */
export type RecoveryPath = 'resume' | 'replay' | 'reload';

/** Storage health as the app sees it. */
export interface StorageStatus {
  /** `ok`: writes land; `degraded`: working in memory because storage failed; `memory`: memory by choice. */
  state: 'opening' | 'ok' | 'degraded' | 'memory';
  kind: string;
  cause?: LifelineError;
  /** Answer of `navigator.storage.persist()` when asked. */
  persisted?: boolean;
}

/** Everything that happens, typed. `at` is epoch ms. */
export type Diagnostic =
  | { type: 'connect'; at: number; turnId: string; attempt: number; lastEventId: number }
  | { type: 'open'; at: number; turnId: string; status: number }
  | { type: 'disconnect'; at: number; turnId: string; cause: LifelineError }
  | { type: 'retry'; at: number; scope: 'stream' | 'replay' | 'submit'; id: string; attempt: number; delayMs: number; cause?: LifelineError }
  | { type: 'resumed'; at: number; turnId: string; fromSeq: number }
  | { type: 'duplicate'; at: number; turnId: string; seq: number }
  | { type: 'gap'; at: number; turnId: string; expected: number; got: number }
  | { type: 'unknown-event'; at: number; turnId: string; eventType: string }
  | { type: 'protocol-error'; at: number; turnId?: string; error: LifelineError }
  | { type: 'integrity-mismatch'; at: number; turnId: string; expectedLength: number; actualLength: number }
  /** Web Crypto is missing (a page on plain HTTP): `turn.end` was checked by `textLength` only. */
  | { type: 'integrity-unchecked'; at: number; turnId: string }
  | { type: 'stalled'; at: number; turnId: string; watchdog: 'first-event' | 'idle'; silentMs: number }
  | { type: 'recovering'; at: number; turnId: string; path: RecoveryPath; fromSeq: number }
  | { type: 'recovered'; at: number; turnId: string; path: RecoveryPath; events: number }
  | { type: 'completed'; at: number; turnId: string; status: EndedTurnStatus }
  | { type: 'failed'; at: number; scope: 'stream' | 'replay' | 'submit'; id: string; error: LifelineError }
  | { type: 'submit'; at: number; operationId: string; conversationId: string; attempt: number }
  | { type: 'accepted'; at: number; operationId: string; turnId: string; replayed: boolean }
  | { type: 'outbox-replay'; at: number; count: number }
  | { type: 'storage'; at: number; status: StorageStatus }
  | { type: 'storage-error'; at: number; error: LifelineError }
  | { type: 'network'; at: number; online: boolean }
  | { type: 'auth-refresh'; at: number; turnId: string }
  /**
   * Tabs of one origin and namespace share one stream per turn: the `leader` tab holds
   * it and relays its events, a `watcher` applies what the leader relays.
   */
  | { type: 'shared'; at: number; turnId: string; role: 'leader' | 'watcher' }
  /**
   * A delivery receipt (docs/protocol.md section 10): `delivered` once the server recorded it,
   * `retry` before another attempt, `mismatch` when the server's text differs (the turn is
   * rebuilt from a full replay), `unsupported` once when the server predates receipts
   * (1.1: no receipt is sent again), `dropped` when refused or too old.
   */
  | { type: 'receipt'; at: number; turnId: string; outcome: 'delivered' | 'retry' | 'mismatch' | 'unsupported' | 'dropped'; delayMs?: number; error?: LifelineError }
  /** `client.drill` was called: `applied` false when the drill does not fit the turn's state (nothing was done). */
  | { type: 'drill'; at: number; turnId: string; drill: DrillKind; applied: boolean };

export type DiagnosticType = Diagnostic['type'];

/**
 * A fault a developer sets off on purpose, to watch the client recover (`client.drill`):
 * - `cut`: the turn's open stream is dropped as a network cut would drop it; the client
 *   reconnects with `Last-Event-ID` (docs/faults.md row 1).
 * - `stall`: the turn's open stream goes deaf (this client ignores every byte it sends, heartbeats
 *   included) until the stall watchdog notices, after the real stall timeout, and recovers as from
 *   a silent proxy (row 2).
 * - `replay`: a live turn is read from the server's log (docs/protocol.md section 3) from its last
 *   seq, then streamed again, as after a stall; an ended, verified turn is thrown away and rebuilt
 *   from seq 0, then checked against `turn.end` again (a receipt's `409` does the same).
 *
 * The server is not involved: nothing is cut or stalled anywhere but in this client.
 */
export type DrillKind = 'cut' | 'stall' | 'replay';

