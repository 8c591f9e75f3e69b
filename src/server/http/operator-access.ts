import { RouteNotFound } from './responses.js';

/** What an operator action that changed something reports to the audit hook (docs/protocol.md section 11). */
export interface OperatorAuditEntry {
  action: 'end';
  /** Who: what `authorizeOperator` answered. */
  operator: string;
  turnId: string;
  /** Whose turn it was. */
  principal: string;
  reason: string;
  /** ISO 8601. */
  at: string;
  /** The turn's status before and after. */
  before: string;
  after: string;
}

/** The operator API's settings, resolved from the handler options. */
export interface OperatorSettings {
  authorize: (request: Request) => string | Promise<string>;
  audit: (entry: OperatorAuditEntry) => void | Promise<void>;
  stuckAfterMs: number;
  undeliveredAfterMs: number;
  /** How long `end` waits for the producer (wherever it runs) to log the end before ending the turn itself, ms. */
  endWaitMs: number;
}

const NOT_FOUND = (): RouteNotFound => new RouteNotFound();

/**
 * The operator's identity, or `404 not_found`: while the API is off, and for any request
 * the hook refuses (throws, rejects, or answers no identity), so its existence leaks nothing.
 */
export async function operatorIdentity(settings: OperatorSettings | undefined, request: Request): Promise<string> {
  if (!settings) throw NOT_FOUND();
  let identity: unknown;
  try {
    identity = await settings.authorize(request);
  } catch {
    throw NOT_FOUND();
  }
  if (typeof identity !== 'string' || identity === '') throw NOT_FOUND();
  return identity;
}
