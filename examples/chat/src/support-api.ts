/**
 * The support page's side of the operator API (docs/protocol.md section 11): plain `fetch`
 * with `Authorization: Bearer <token>`, every answer kept whole so the page can show its JSON.
 * A refused token and an API that is off both answer `404 not_found` (so the API's existence
 * leaks nothing); the page tells them apart by the example server's config, not by the API.
 */
import type { OperatorTurn } from 'lifeline-chat/server';

/** The two lists the page shows. */
export type SupportList = 'stuck' | 'undelivered';

/** One answer of the operator API, as the page shows it. */
export interface OperatorAnswer {
  method: 'GET' | 'POST';
  path: string;
  status: number;
  body: unknown;
}

/** An `action` event of a turn (section 2), as the detail view needs it. */
export interface ActionEvent {
  seq: number;
  callId: string;
  name: string;
  status: 'started' | 'completed' | 'failed';
  input?: unknown;
  output?: unknown;
  error?: { code: string; message: string };
}

/** What the page shows of one turn besides its turn object: its actions (latest event per call) and its text so far. */
export interface TurnDetail {
  lastSeq: number;
  actions: ActionEvent[];
  text: string;
  end?: { status: string; error?: { code: string; message: string } };
}

const BASE = '/api/operator/turns';
/** Longer than the handler's wait for a producer to log an operator's end (at least 5 s). */
const REQUEST_TIMEOUT_MS = 15_000;

/** One operator request; rejects only when no answer came (network, timeout). */
export async function operatorRequest(token: string, method: OperatorAnswer['method'], path: string, body?: unknown): Promise<OperatorAnswer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  // Bounded, so a server that never answers cannot hold the page's poll (or an End) forever.
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const response = await fetch(path, { method, headers, signal, ...(body !== undefined && { body: JSON.stringify(body) }) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page): shown as the text it is.
  }
  return { method, path, status: response.status, body: parsed };
}

export function listPath(list: SupportList, limit = 50): string {
  return `${BASE}?state=${list}&limit=${limit}`;
}

export function showPath(turnId: string): string {
  return `${BASE}/${encodeURIComponent(turnId)}?limit=10000`;
}

export function endPath(turnId: string): string {
  return `${BASE}/${encodeURIComponent(turnId)}/end`;
}

/** The turns of a list answer; none when the answer is not one. */
export function turnsOf(answer: OperatorAnswer): OperatorTurn[] {
  const body = answer.body as { turns?: unknown } | null;
  return answer.status === 200 && Array.isArray(body?.turns) ? (body.turns as OperatorTurn[]) : [];
}

type LoggedEvent = { seq: number; type: string; text?: string; callId?: string; status?: string; error?: { code: string; message: string } };

/** Folds a show answer's events into the detail view: one entry per action call, its latest event. */
export function detailOf(answer: OperatorAnswer): TurnDetail | undefined {
  const body = answer.body as { turn?: OperatorTurn; events?: LoggedEvent[] } | null;
  if (answer.status !== 200 || !body?.turn || !Array.isArray(body.events)) return undefined;
  const actions = new Map<string, ActionEvent>();
  let text = '';
  let end: TurnDetail['end'];
  for (const event of body.events) {
    if (event.type === 'delta') text += event.text ?? '';
    else if (event.type === 'action' && event.callId !== undefined) actions.set(event.callId, event as unknown as ActionEvent);
    else if (event.type === 'turn.end') end = { status: event.status ?? 'failed', ...(event.error && { error: event.error }) };
  }
  return { lastSeq: body.turn.lastSeq, actions: [...actions.values()], text, ...(end && { end }) };
}
