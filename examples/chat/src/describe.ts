/**
 * Diagnostics as sentences a person can read in the log panel, and the tone that colours
 * them. Kept out of the SDK on purpose: wording is the app's business.
 */
import type { Diagnostic } from 'lifeline';

export type Tone = 'info' | 'good' | 'warn' | 'bad';

const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
const short = (id: string): string => (id.length > 8 ? id.slice(-6) : id);
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const PATHS = { resume: 'resuming the stream', replay: 'replaying from the server', reload: 'restoring from this device' } as const;
const STORAGE = {
  opening: (kind: string) => `Opening ${kind}`,
  ok: (kind: string) => `Storage ready (${kind})`,
  memory: () => 'Keeping messages in memory only',
  degraded: (kind: string) => `${kind} failed — keeping messages in memory`,
} as const;
const SCOPES = { stream: 'Connection lost', replay: 'Replay failed', submit: 'Sending failed' } as const;

export function describeDiagnostic(d: Diagnostic): { text: string; tone: Tone } {
  switch (d.type) {
    case 'connect':
      return d.attempt === 0 && d.lastEventId === 0
        ? { text: `Connecting to turn ${short(d.turnId)}`, tone: 'info' }
        : { text: `Reconnecting to turn ${short(d.turnId)} after event ${d.lastEventId} (attempt ${Math.max(1, d.attempt)})`, tone: 'info' };
    case 'open':
      return { text: `Stream open for turn ${short(d.turnId)}`, tone: 'info' };
    case 'disconnect':
      return { text: `Stream of turn ${short(d.turnId)} dropped: ${d.cause.message}`, tone: 'warn' };
    case 'retry':
      return { text: `${SCOPES[d.scope]}, retrying ${d.delayMs < 50 ? 'now' : `in ${seconds(d.delayMs)}`} (attempt ${d.attempt})`, tone: 'warn' };
    case 'resumed':
      return { text: `Resumed turn ${short(d.turnId)} after event ${d.fromSeq}`, tone: 'good' };
    case 'duplicate':
      return { text: `Dropped a duplicate of event ${d.seq}`, tone: 'info' };
    case 'gap':
      return { text: `Missing events ${d.expected}–${d.got - 1} — filling the gap from the server`, tone: 'warn' };
    case 'unknown-event':
      return { text: `Skipped an event of unknown type “${d.eventType}”`, tone: 'info' };
    case 'protocol-error':
      return { text: `The server sent something invalid: ${d.error.message}`, tone: 'bad' };
    case 'integrity-mismatch':
      return { text: `Text check failed (${d.actualLength} vs ${d.expectedLength} characters) — rebuilding from a full replay`, tone: 'warn' };
    case 'integrity-unchecked':
      return { text: `Turn ${short(d.turnId)}: length checked, hash not (no Web Crypto on a plain-HTTP page)`, tone: 'warn' };
    case 'stalled':
      return { text: `Stalled for ${seconds(d.silentMs)} — recovering from the server`, tone: 'warn' };
    case 'recovering':
      return { text: `Recovering turn ${short(d.turnId)} by ${PATHS[d.path]} after event ${d.fromSeq}`, tone: 'warn' };
    case 'recovered':
      return { text: `Recovered ${plural(d.events, 'event')} of turn ${short(d.turnId)} by ${PATHS[d.path]}`, tone: 'good' };
    case 'completed':
      return d.status === 'complete'
        ? { text: `Turn ${short(d.turnId)} complete, text verified`, tone: 'good' }
        : { text: `Turn ${short(d.turnId)} ended ${d.status}`, tone: d.status === 'failed' ? 'bad' : 'info' };
    case 'failed':
      return { text: `${d.scope === 'submit' ? 'Message' : 'Turn'} ${short(d.id)} failed: ${d.error.message}`, tone: 'bad' };
    case 'submit':
      return { text: d.attempt <= 1 ? 'Sending a message' : `Sending a message again (attempt ${d.attempt})`, tone: 'info' };
    case 'accepted':
      return {
        text: d.replayed
          ? `The server already had this message (same idempotency key) — turn ${short(d.turnId)}`
          : `Message accepted — turn ${short(d.turnId)}`,
        tone: 'good',
      };
    case 'outbox-replay':
      return { text: `Sending ${plural(d.count, 'message')} left from before`, tone: 'info' };
    case 'storage':
      return { text: STORAGE[d.status.state](d.status.kind === 'indexeddb' ? 'IndexedDB' : d.status.kind), tone: d.status.state === 'degraded' ? 'warn' : 'info' };
    case 'storage-error':
      return { text: `Storage problem: ${d.error.message}`, tone: 'warn' };
    case 'network':
      return d.online ? { text: 'Back online — retrying now', tone: 'good' } : { text: 'The browser is offline — waiting for the network', tone: 'warn' };
    case 'auth-refresh':
      return { text: `Refreshing credentials for turn ${short(d.turnId)}`, tone: 'info' };
    case 'shared':
      return d.role === 'leader'
        ? { text: `This tab streams turn ${short(d.turnId)} for every tab`, tone: 'info' }
        : { text: `Turn ${short(d.turnId)} arrives through another tab's stream`, tone: 'info' };
    default:
      // A diagnostic type newer than this app: still shown, by name.
      return { text: `Diagnostic: ${(d as { type: string }).type}`, tone: 'info' };
  }
}

export function clock(at: number): string {
  const date = new Date(at);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(Math.floor(date.getMilliseconds() / 100), 1)}`;
}
