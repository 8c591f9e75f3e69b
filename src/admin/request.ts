/** One request of `lifeline-chat-admin` to the operator API, and what came of it. */
import type { AdminInvocation } from './args.js';

export type AdminAnswer =
  | { kind: 'ok'; body: unknown }
  | { kind: 'error'; status: number; code: string; message: string }
  | { kind: 'unreachable'; message: string };

function target(invocation: AdminInvocation): { url: string; init: RequestInit } {
  const base = `${invocation.baseUrl.replace(/\/+$/, '')}/operator/turns`;
  const { command } = invocation;
  const headers = { ...invocation.headers, 'content-type': 'application/json' };
  if (command.kind === 'list') {
    const query = new URLSearchParams({ state: command.state, ...command.query });
    return { url: `${base}?${query}`, init: { headers } };
  }
  if (command.kind === 'show') return { url: `${base}/${command.turnId}`, init: { headers } };
  if (command.kind === 'end') return { url: `${base}/${command.turnId}/end`, init: { method: 'POST', headers, body: JSON.stringify({ reason: command.reason }) } };
  throw new Error('help makes no request');
}

export async function operatorRequest(invocation: AdminInvocation): Promise<AdminAnswer> {
  const { url, init } = target(invocation);
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(invocation.timeoutMs) });
  } catch (cause) {
    return { kind: 'unreachable', message: `${url}: ${(cause as Error)?.message ?? String(cause)}` };
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: 'error', status: response.status, code: 'invalid_response', message: `Not JSON: ${text.slice(0, 200)}` };
  }
  if (response.ok) return { kind: 'ok', body };
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return { kind: 'error', status: response.status, code: String(error?.code ?? 'unknown'), message: String(error?.message ?? '') };
}
