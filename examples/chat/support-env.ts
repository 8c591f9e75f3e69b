/**
 * The example server's support settings (docs/protocol.md section 11): whether the operator
 * API is on and who may call it, its stuck/undelivered windows, and the development-only
 * principal header, read from the environment (see README.md) and turned into the handler's
 * options. The `/support` page asks `GET /__example/config` for the part it may know.
 */
import { timingSafeEqual } from 'node:crypto';
import type { LifelineHandlerOptions, MeterLike, OperatorAuditEntry } from 'lifeline-chat/server';

export interface SupportSettings {
  /** Operators send `Authorization: Bearer <token>`; absent: the operator API is off. */
  operatorToken?: string;
  /** A live turn with nothing logged for this long is stuck, ms; absent: the handler's default. */
  stuckAfterMs?: number;
  /** An ended turn with no receipt this long after its end is undelivered, ms; absent: the handler's default. */
  undeliveredAfterMs?: number;
  /** Development only: the named request header is the principal (absent: everyone is `anonymous`). */
  principalHeader?: string;
  /** An OpenTelemetry meter for the handler's counters and delivery-latency histogram. */
  meter?: MeterLike;
}

/** What the pages may know of the settings (never the token). */
export interface ExampleConfig {
  operatorApi: boolean;
  stuckAfterMs: number;
  undeliveredAfterMs: number;
  principalHeader: string | null;
}

/** The handler's defaults (docs/protocol.md section 11), shown by the page when the environment sets none. */
const DEFAULT_WINDOW_MS = 60_000;
const HEADER_NAME = /^[A-Za-z0-9-]{1,64}$/;

function positiveMs(name: string, env: NodeJS.ProcessEnv): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer of milliseconds, got ${JSON.stringify(raw)}.`);
  return value;
}

/** Reads OPERATOR_TOKEN, STUCK_AFTER_MS, UNDELIVERED_AFTER_MS and PRINCIPAL_HEADER; a malformed value throws at start. */
export function supportSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SupportSettings {
  const settings: SupportSettings = {};
  const token = env['OPERATOR_TOKEN'];
  if (token) settings.operatorToken = token;
  const stuck = positiveMs('STUCK_AFTER_MS', env);
  if (stuck !== undefined) settings.stuckAfterMs = stuck;
  const undelivered = positiveMs('UNDELIVERED_AFTER_MS', env);
  if (undelivered !== undefined) settings.undeliveredAfterMs = undelivered;
  const header = env['PRINCIPAL_HEADER'];
  if (header) {
    if (!HEADER_NAME.test(header)) throw new Error(`PRINCIPAL_HEADER must be a header name, got ${JSON.stringify(header)}.`);
    settings.principalHeader = header;
  }
  return settings;
}

/** Constant-time, so the answer's timing says nothing about how much of a guess was right. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The handler options the settings stand for. */
export function supportHandlerOptions(settings: SupportSettings): Partial<LifelineHandlerOptions> {
  const options: Partial<LifelineHandlerOptions> = {};
  const { operatorToken, principalHeader } = settings;
  if (operatorToken) {
    options.authorizeOperator = (request) => {
      if (!sameSecret(request.headers.get('authorization') ?? '', `Bearer ${operatorToken}`)) throw new Error('Not an operator.');
      return 'support';
    };
    options.audit = (entry: OperatorAuditEntry) => console.info(`[example] operator ${entry.operator} ${entry.action} ${entry.turnId} (${entry.principal}): ${entry.reason}`);
  }
  if (settings.stuckAfterMs !== undefined) options.stuckAfterMs = settings.stuckAfterMs;
  if (settings.undeliveredAfterMs !== undefined) options.undeliveredAfterMs = settings.undeliveredAfterMs;
  // Anyone can claim any name this way: a way to try two users side by side, never an authentication.
  if (principalHeader) options.authorize = (request) => request.headers.get(principalHeader) || 'anonymous';
  if (settings.meter) options.meter = settings.meter;
  return options;
}

export function exampleConfig(settings: SupportSettings): ExampleConfig {
  return {
    operatorApi: settings.operatorToken !== undefined,
    stuckAfterMs: settings.stuckAfterMs ?? DEFAULT_WINDOW_MS,
    undeliveredAfterMs: settings.undeliveredAfterMs ?? DEFAULT_WINDOW_MS,
    principalHeader: settings.principalHeader ?? null,
  };
}
