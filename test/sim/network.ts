/**
 * The simulated network: a `fetch` per tab that routes to the simulated server in process,
 * frames its event streams as SSE, and injects the faults of docs/faults.md on the way:
 * offline, 5xx / 429 with `Retry-After`, requests that never answer, delay, streams cut mid
 * event, streams that go silent, duplicated and reordered events, bytes split anywhere, a
 * hostile `Lifeline-Heartbeat`. Every response chunk is a world task on virtual time.
 */
import type { Rng } from './rng.js';
import type { Scheduler } from './scheduler.js';
import type { LoggedEvent, SimServer } from './server.js';

export interface NetworkFaults {
  offline: boolean;
  /** The next this many requests answer `failStatus` (with `Retry-After` seconds when set). */
  failNext: number;
  failStatus: number;
  retryAfterSec?: number | undefined;
  /** The next this many requests never answer (only their abort ends them). */
  hangNext: number;
  /** Per stream: the chance it is cut mid-way, goes silent for good, duplicates or reorders one event. */
  cut: number;
  silent: number;
  duplicate: number;
  reorder: number;
  /** Per stream: the chance its `Lifeline-Heartbeat` is 900 000 000 (P1). */
  hugeHeartbeat: number;
  /** Answer latency range, ms. */
  latency: [number, number];
}

export const CALM: NetworkFaults = { offline: false, failNext: 0, failStatus: 503, hangNext: 0, cut: 0, silent: 0, duplicate: 0, reorder: 0, hugeHeartbeat: 0, latency: [1, 30] };

export interface SimNetwork {
  faults: NetworkFaults;
  /** A `fetch` for the tab `owner`. */
  fetchFor(owner: string): typeof fetch;
  /** Drops every connection and request of `owner` (its tab closed or crashed). */
  kill(owner: string): void;
  /** Requests not yet answered and streams still open, of `owner` or of everyone. */
  inflight(owner?: string): number;
  /** What the server saw, for the trace: `POST /conversations/c/messages 202`. */
  readonly log: string[];
  /** Most requests made within any one virtual second (a retry loop without backoff shows here). */
  readonly peakRequestsPerSecond: number;
}

/** The reference server's 1.2 heartbeat (docs/protocol.md section 2). */
export const HEARTBEAT_MS = 1000;
const encoder = new TextEncoder();

function sse(event: LoggedEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

export function createSimNetwork(rng: Rng, scheduler: Scheduler, server: SimServer): SimNetwork {
  const faults: NetworkFaults = { ...CALM };
  /** Per owner: the cleanup of each open request or stream. */
  const open = new Map<string, Set<() => void>>();
  const log: string[] = [];
  let [second, inSecond, peak] = [0, 0, 0];
  const count = (): void => {
    const s = Math.floor(scheduler.now() / 1000);
    if (s !== second) [second, inSecond] = [s, 0];
    peak = Math.max(peak, ++inSecond);
  };
  const track = (owner: string, cleanup: () => void): (() => void) => {
    let set = open.get(owner);
    if (!set) open.set(owner, (set = new Set()));
    set.add(cleanup);
    return () => set.delete(cleanup);
  };

  /** The event stream of section 2, with this stream's faults drawn now. */
  const stream = (owner: string, turnId: string, after: number, signal: AbortSignal | null | undefined): Response => {
    const read = server.read(turnId, after)!;
    if (read.ended && read.events.length === 0) return new Response(null, { status: 204 });
    const cutAt = rng.chance(faults.cut) ? rng.int(0, 6) : Infinity;
    const silentAt = rng.chance(faults.silent) ? rng.int(0, 6) : Infinity;
    const duplicate = rng.chance(faults.duplicate);
    const reorder = rng.chance(faults.reorder);
    const heartbeat = rng.chance(faults.hugeHeartbeat) ? 900_000_000 : HEARTBEAT_MS;
    let sent = after;
    let count = 0;
    let done = false;
    let held: LoggedEvent | undefined;
    let beat: number | undefined;
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const cleanups: (() => void)[] = [];
    const finish = (how: 'close' | Error): void => {
      if (done) return;
      done = true;
      for (const cleanup of cleanups) cleanup();
      if (beat !== undefined) scheduler.cancel(beat);
      try {
        if (how === 'close') controller.close();
        else controller.error(how);
      } catch {
        // Already cancelled by the reader.
      }
    };
    /** Bytes go out as a world task, sometimes split in two anywhere (SSE parsers must cope). */
    const write = (text: string): void => {
      const bytes = encoder.encode(text);
      const cut = rng.chance(0.2) ? rng.int(1, Math.max(1, bytes.length - 1)) : bytes.length;
      for (const part of cut < bytes.length ? [bytes.subarray(0, cut), bytes.subarray(cut)] : [bytes]) {
        scheduler.task(() => {
          if (done) return;
          try {
            controller.enqueue(part);
          } catch {
            finish('close');
          }
        }, 0, owner);
      }
    };
    const armBeat = (): void => {
      if (beat !== undefined) scheduler.cancel(beat);
      beat = scheduler.task(() => {
        beat = undefined;
        if (done || count >= silentAt) return;
        write('event: heartbeat\ndata: {}\n\n');
        armBeat();
      }, HEARTBEAT_MS, owner);
    };
    const pump = (): void => {
      if (done || count >= silentAt) return;
      const { events, ended } = server.read(turnId, sent)!;
      for (const event of events) {
        if (count >= cutAt) return finish(new TypeError('network error: connection reset'));
        if (count >= silentAt) return;
        sent = event.seq;
        count++;
        if (reorder && !held && event.type === 'delta') {
          held = event;
          continue;
        }
        write(sse(event));
        if (held) write(sse(held));
        held = undefined;
        if (duplicate && count === 2) write(sse(event));
      }
      armBeat();
      if (ended && sent >= server.read(turnId, 0)!.events.length && !held) scheduler.task(() => finish('close'), 1, owner);
    };
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
      cancel() {
        finish('close');
      },
    });
    const abort = (): void => finish(signal?.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError'));
    signal?.addEventListener('abort', abort, { once: true });
    cleanups.push(() => signal?.removeEventListener('abort', abort));
    cleanups.push(server.watch(turnId, () => pump()));
    cleanups.push(track(owner, () => finish(new TypeError('network error: tab gone'))));
    write(`retry: 1000\n\n`);
    pump();
    return new Response(body, {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'lifeline-heartbeat': String(heartbeat) },
    });
  };

  /** Routes one request (docs/protocol.md sections 1 to 5). */
  const route = (owner: string, method: string, url: URL, headers: Headers, body: string, signal: AbortSignal | null | undefined): Response => {
    const path = url.pathname.replace(/^\/api/, '');
    const after = (value: string | null): number | undefined => (value === null ? 0 : /^[0-9]{1,15}$/.test(value) ? Number(value) : undefined);
    let match: RegExpMatchArray | null;
    if (method === 'POST' && (match = path.match(/^\/conversations\/([^/]+)\/messages$/))) {
      const answer = server.submit(match[1]!, headers.get('idempotency-key') ?? '', body);
      return json(answer.status, answer.body, answer.replayed ? { 'idempotent-replayed': 'true' } : {});
    }
    if (method === 'GET' && (match = path.match(/^\/turns\/([^/]+)\/events$/))) {
      if (!server.turns.has(match[1]!)) return json(404, { error: { code: 'turn_not_found', message: 'no' } });
      const cursor = after(headers.get('last-event-id') ?? url.searchParams.get('after'));
      if (cursor === undefined) return json(400, { error: { code: 'invalid_resume_point', message: 'no' } });
      if (cursor > server.read(match[1]!, 0)!.events.length) return json(400, { error: { code: 'resume_point_ahead', message: 'no' } });
      return stream(owner, match[1]!, cursor, signal);
    }
    if (method === 'GET' && (match = path.match(/^\/turns\/([^/]+)$/))) {
      const cursor = after(url.searchParams.get('after'));
      const limit = Number(url.searchParams.get('limit') ?? 1000);
      if (cursor === undefined) return json(400, { error: { code: 'invalid_resume_point', message: 'no' } });
      const answer = server.replay(match[1]!, cursor, limit);
      return json(answer.status, answer.body);
    }
    if (method === 'GET' && (match = path.match(/^\/conversations\/([^/]+)\/turns$/))) {
      const answer = server.list(match[1]!, Number(url.searchParams.get('limit') ?? 50));
      return json(answer.status, answer.body);
    }
    if (method === 'POST' && (match = path.match(/^\/turns\/([^/]+)\/cancel$/))) {
      const answer = server.cancel(match[1]!);
      return json(answer.status, answer.body);
    }
    // Receipts and the operator API: a 1.1 server answers 404 (section 10).
    return json(404, { error: { code: 'not_found', message: 'no' } });
  };

  const fetchFor = (owner: string): typeof fetch =>
    async (input, init = {}) => {
      const request = input instanceof Request ? input : undefined;
      const url = new URL(request?.url ?? String(input));
      const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
      const headers = new Headers(init.headers ?? request?.headers);
      const body = typeof init.body === 'string' ? init.body : '';
      const signal = init.signal ?? request?.signal;
      const label = `${method} ${url.pathname.replace(/^\/api/, '')}${url.search}`;
      count();
      return new Promise<Response>((resolve, reject) => {
        let settled = false;
        let untrack = (): void => {};
        const settle = (answer: (() => Response) | Error): void => {
          if (settled) return;
          settled = true;
          untrack();
          signal?.removeEventListener('abort', onAbort);
          if (typeof answer !== 'function') return reject(answer);
          const response = answer();
          log.push(`${owner} ${label} ${response.status}`);
          if (process.env['SIM_NETWORK']) console.log(`  ${(scheduler.now() / 1000).toFixed(3)}s ${owner} ${label} ${response.status}`);
          resolve(response);
        };
        const onAbort = (): void => settle(signal?.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError'));
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        untrack = track(owner, () => settle(new TypeError('network error: tab gone')));
        if (faults.offline) return void scheduler.task(() => settle(new TypeError('Failed to fetch (offline)')), 1, owner);
        if (faults.hangNext > 0) {
          faults.hangNext--;
          log.push(`${owner} ${label} (never answers)`);
          return;
        }
        const delay = rng.int(...faults.latency);
        if (faults.failNext > 0) {
          faults.failNext--;
          const retryAfter = faults.retryAfterSec === undefined ? {} : { 'retry-after': String(faults.retryAfterSec) };
          const status = faults.failStatus;
          return void scheduler.task(() => settle(() => json(status, { error: { code: status === 429 ? 'rate_limited' : 'overloaded', message: 'sim' } }, retryAfter)), delay, owner);
        }
        scheduler.task(() => settle(() => route(owner, method, url, headers, body, signal)), delay, owner);
      });
    };

  return {
    faults,
    fetchFor,
    kill(owner) {
      for (const cleanup of [...(open.get(owner) ?? [])]) cleanup();
      open.delete(owner);
    },
    inflight: (owner) => (owner === undefined ? [...open.values()].reduce((n, set) => n + set.size, 0) : (open.get(owner)?.size ?? 0)),
    log,
    get peakRequestsPerSecond() {
      return peak;
    },
  };
}
