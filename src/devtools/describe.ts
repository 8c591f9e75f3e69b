'use client';
/**
 * One line per diagnostic, for developers: the type's facts in few words (the example app
 * words them for users; this panel keeps the SDK's vocabulary). And the tone that colours it.
 */
import type { Diagnostic } from '../types.js';

export type Tone = 'info' | 'good' | 'warn' | 'bad';

const ms = (value: number): string => (value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`);

/** `12:04:31.2`: wall-clock time to a tenth of a second. */
export function clockTime(at: number): string {
  const date = new Date(at);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${Math.floor(date.getMilliseconds() / 100)}`;
}

/** The last characters of an id: enough to tell turns apart on one screen. */
export const shortId = (id: string): string => (id.length > 8 ? `…${id.slice(-6)}` : id);

export function describe(d: Diagnostic): { text: string; tone: Tone } {
  switch (d.type) {
    case 'connect':
      return { text: `connect after seq ${d.lastEventId}${d.attempt ? `, attempt ${d.attempt}` : ''}`, tone: 'info' };
    case 'open':
      return { text: `stream open (${d.status})`, tone: 'info' };
    case 'disconnect':
      return { text: `disconnect: ${d.cause.code} (${d.cause.message})`, tone: 'warn' };
    case 'retry':
      return { text: `retry ${d.scope} #${d.attempt} in ${ms(d.delayMs)}${d.cause ? `: ${d.cause.code}` : ''}`, tone: 'warn' };
    case 'resumed':
      return { text: `resumed after seq ${d.fromSeq}`, tone: 'good' };
    case 'duplicate':
      return { text: `duplicate seq ${d.seq} dropped`, tone: 'info' };
    case 'gap':
      return { text: `gap: expected seq ${d.expected}, got ${d.got}`, tone: 'warn' };
    case 'unknown-event':
      return { text: `unknown event type "${d.eventType}" stored, not shown`, tone: 'info' };
    case 'protocol-error':
      return { text: `protocol error: ${d.error.code} (${d.error.message})`, tone: 'bad' };
    case 'integrity-mismatch':
      return { text: `integrity mismatch: ${d.actualLength} vs ${d.expectedLength} code units, rebuilding`, tone: 'warn' };
    case 'integrity-unchecked':
      return { text: 'length checked, SHA-256 not (no Web Crypto)', tone: 'warn' };
    case 'stalled':
      return { text: `stalled: ${d.watchdog} watchdog, silent ${ms(d.silentMs)}`, tone: 'warn' };
    case 'recovering':
      return { text: `recovering by ${d.path} after seq ${d.fromSeq}`, tone: 'warn' };
    case 'recovered':
      return { text: `recovered ${d.events} event${d.events === 1 ? '' : 's'} by ${d.path}`, tone: 'good' };
    case 'completed':
      return { text: `ended ${d.status}${d.status === 'complete' ? ', verified' : ''}`, tone: d.status === 'failed' ? 'bad' : 'good' };
    case 'failed':
      return { text: `${d.scope} failed: ${d.error.code} (${d.error.message})`, tone: 'bad' };
    case 'submit':
      return { text: `submit #${d.attempt} to ${d.conversationId}`, tone: 'info' };
    case 'accepted':
      return { text: `accepted${d.replayed ? ' (Idempotent-Replayed)' : ''} as turn ${shortId(d.turnId)}`, tone: 'good' };
    case 'outbox-replay':
      return { text: `${d.count} stored submission${d.count === 1 ? '' : 's'} to send`, tone: 'info' };
    case 'storage':
      return { text: `storage ${d.status.state} (${d.status.kind})`, tone: d.status.state === 'degraded' ? 'warn' : 'info' };
    case 'storage-error':
      return { text: `storage error: ${d.error.code} (${d.error.message})`, tone: 'warn' };
    case 'network':
      return { text: d.online ? 'browser online' : 'browser offline', tone: d.online ? 'good' : 'warn' };
    case 'auth-refresh':
      return { text: 'headers re-read after 401/403', tone: 'info' };
    case 'shared':
      return { text: d.role === 'leader' ? 'this tab streams for every tab' : "watching another tab's stream", tone: 'info' };
    case 'receipt':
      return { text: `receipt ${d.outcome}${d.error ? `: ${d.error.code}` : ''}`, tone: d.outcome === 'mismatch' || d.outcome === 'dropped' ? 'warn' : 'info' };
    case 'drill':
      return { text: `drill ${d.drill}${d.applied ? '' : ': does not fit the turn now, nothing done'}`, tone: d.applied ? 'warn' : 'info' };
  }
}
