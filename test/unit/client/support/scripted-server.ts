/**
 * A tiny raw HTTP server speaking just enough of the protocol for the client's tests,
 * whose event-stream answers can be scripted byte by byte: hostile input, odd framing,
 * status codes. Replay answers come from the same log, so a turn can always complete.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sha256Hex } from '../../../../src/protocol/integrity.js';
import type { TurnEvent } from '../../../../src/protocol/schemas.js';

export const TURN = 'turn_scripted_0000001';

/** One request as the server saw it. */
export interface SeenRequest {
  kind: 'stream' | 'replay' | 'list' | 'cancel' | 'other';
  url: string;
  headers: IncomingMessage['headers'];
  /** `Last-Event-ID` header or `after` query, as sent. */
  cursor: string | undefined;
}

/** What to do with one stream request: the default answer, or a script. */
export type StreamScript = (context: { request: SeenRequest; index: number; res: ServerResponse; after: number }) => Promise<void | 'default'> | void | 'default';

export interface ScriptedServer {
  baseUrl: string;
  requests: SeenRequest[];
  /** Stream requests only. */
  readonly streams: SeenRequest[];
  readonly replays: SeenRequest[];
  log: TurnEvent[];
  close(): Promise<void>;
}

export interface ScriptedServerOptions {
  log: TurnEvent[];
  /** Per stream request (0-based index); `'default'` serves the log after the cursor and ends. */
  stream?: StreamScript;
  /** Per replay request; `'default'` serves a page of the log. */
  replay?: (context: { request: SeenRequest; index: number; res: ServerResponse; after: number }) => Promise<void | 'default'> | void | 'default';
  /** Server-side `retry:` sent first by the default stream answer. */
  retryMs?: number;
}

/** The SSE message for one event, as the reference server writes it. */
export function sse(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** A clean log: turn.start, one event per body, turn.end with the right length and hash. */
export async function buildLog(
  bodies: ReadonlyArray<string | { action: Omit<Extract<TurnEvent, { type: 'action' }>, 'turnId' | 'seq' | 'type'> }>,
  options: { turnId?: string; status?: 'complete' | 'failed' | 'cancelled'; conversationId?: string } = {},
): Promise<TurnEvent[]> {
  const turnId = options.turnId ?? TURN;
  const events: TurnEvent[] = [
    { turnId, seq: 1, type: 'turn.start', messageId: 'msg_1', conversationId: options.conversationId ?? 'conv_1', createdAt: '2025-01-01T00:00:00.000Z' },
  ];
  let text = '';
  for (const body of bodies) {
    const seq = events.length + 1;
    if (typeof body === 'string') {
      text += body;
      events.push({ turnId, seq, type: 'delta', text: body });
    } else {
      events.push({ turnId, seq, type: 'action', ...body.action });
    }
  }
  events.push({
    turnId,
    seq: events.length + 1,
    type: 'turn.end',
    status: options.status ?? 'complete',
    textLength: text.length,
    textSha256: await sha256Hex(text),
  });
  return events;
}

function cursorOf(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers['last-event-id'];
  if (typeof header === 'string') return header;
  return url.searchParams.get('after') ?? undefined;
}

function turnObject(log: TurnEvent[], upTo: number) {
  const last = log[Math.min(upTo, log.length) - 1];
  const ended = last?.type === 'turn.end';
  return {
    id: log[0]?.turnId ?? TURN,
    conversationId: 'conv_1',
    messageId: 'msg_1',
    status: ended ? (last.status as string) : upTo === 0 ? 'pending' : 'streaming',
    lastSeq: Math.min(upTo, log.length),
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
  };
}

/** Writes the default replay page of `log` after `after`. */
export function writeReplayPage(res: ServerResponse, log: TurnEvent[], after: number, limit = 1000): void {
  const events = log.filter((event) => event.seq > after).slice(0, limit);
  const last = events.at(-1)?.seq ?? after;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ turn: turnObject(log, log.length), events, hasMore: last < log.length }));
}

/** Writes the default stream answer: `retry:`, the log after `after`, then the end. */
export function writeStream(res: ServerResponse, log: TurnEvent[], after: number, retryMs = 1000): void {
  if (log.at(-1)?.type === 'turn.end' && after >= log.length) {
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`retry: ${retryMs}\n\n${log.filter((event) => event.seq > after).map(sse).join('')}`);
}

/** Starts the server on an ephemeral port of 127.0.0.1 under `/api`. */
export async function startScriptedServer(options: ScriptedServerOptions): Promise<ScriptedServer> {
  const requests: SeenRequest[] = [];
  let streamIndex = 0;
  let replayIndex = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const kind: SeenRequest['kind'] = /\/turns\/[^/]+\/events$/.test(path)
      ? 'stream'
      : /\/turns\/[^/]+\/cancel$/.test(path)
        ? 'cancel'
        : /\/turns\/[^/]+$/.test(path)
          ? 'replay'
          : /\/conversations\/[^/]+\/turns$/.test(path)
            ? 'list'
            : 'other';
    const request: SeenRequest = { kind, url: req.url ?? '', headers: req.headers, cursor: cursorOf(req, url) };
    requests.push(request);
    const after = Number(request.cursor ?? '0');
    void (async () => {
      if (kind === 'stream') {
        const index = streamIndex++;
        const scripted = options.stream === undefined ? 'default' : await options.stream({ request, index, res, after });
        if (scripted === 'default') writeStream(res, options.log, after, options.retryMs);
        return;
      }
      if (kind === 'replay') {
        const index = replayIndex++;
        const scripted = options.replay === undefined ? 'default' : await options.replay({ request, index, res, after });
        if (scripted === 'default') writeReplayPage(res, options.log, after);
        return;
      }
      if (kind === 'list') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ turns: [turnObject(options.log, options.log.length)] }));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/api`,
    requests,
    get streams() {
      return requests.filter((request) => request.kind === 'stream');
    },
    get replays() {
      return requests.filter((request) => request.kind === 'replay');
    },
    log: options.log,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
