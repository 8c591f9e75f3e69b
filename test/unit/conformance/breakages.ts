/**
 * Deliberately broken variants of the reference server, made by wrapping its handler's
 * Request/Response: each breaks one rule of docs/protocol.md so a test can prove the
 * conformance suite notices.
 */
import type { LifelineHandler } from '../../../src/server/http/handler.js';

/** A handler around the reference one. */
export type Breakage = (request: Request, handler: LifelineHandler) => Promise<Response>;

const isStream = (response: Response): boolean => (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
const isReplay = (request: Request): boolean => request.method === 'GET' && /\/turns\/[^/]+$/.test(new URL(request.url).pathname);

/** A response with the same status and headers as `response` and another body. */
function withBody(response: Response, body: BodyInit | null, headers: Headers = new Headers(response.headers)): Response {
  headers.delete('content-length');
  return new Response(body, { status: response.status, headers });
}

/** Rewrites each SSE message block (the text before a blank line) of a stream body; `null` drops it. */
function rewriteBlocks(response: Response, rewrite: (block: string) => string | null): Response {
  let pending = '';
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const transform = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      const blocks = pending.split('\n\n');
      pending = blocks.pop() ?? '';
      const out = blocks.map(rewrite).filter((block): block is string => block !== null);
      if (out.length > 0) controller.enqueue(encoder.encode(out.map((block) => `${block}\n\n`).join('')));
    },
    flush(controller) {
      if (pending !== '') controller.enqueue(encoder.encode(pending));
    },
  });
  return withBody(response, response.body?.pipeThrough(transform) ?? null);
}

export const breakages = {
  /** The stream leaves out the event with seq 3. */
  async skippedSeq(request, handler) {
    const response = await handler(request);
    return isStream(response) ? rewriteBlocks(response, (block) => (/^id: 3$/m.test(block) ? null : block)) : response;
  },

  /** A resume at the end of a finished turn answers 200 with an empty stream instead of 204. */
  async missing204(request, handler) {
    const response = await handler(request);
    if (response.status !== 204) return response;
    return new Response('retry: 1000\n\n', { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
  },

  /** Replay answers carry a delta whose text differs from what the stream sent. */
  async replayDiffers(request, handler) {
    const response = await handler(request);
    if (!isReplay(request) || response.status !== 200) return response;
    const body = (await response.json()) as { events: { type: string; text?: string }[] };
    const delta = body.events.find((event) => event.type === 'delta');
    if (delta) delta.text = `${delta.text ?? ''}!`;
    return withBody(response, JSON.stringify(body));
  },

  /** Idempotency is ignored: every submission gets a fresh key, so a retry makes a second turn. */
  async idempotencyCreatesSecondTurn(request, handler) {
    if (request.method !== 'POST' || !request.headers.has('idempotency-key')) return handler(request);
    const headers = new Headers(request.headers);
    headers.set('idempotency-key', `fresh-${crypto.randomUUID()}`);
    return handler(new Request(request.url, { method: 'POST', headers, body: await request.text() }));
  },

  /** Heartbeats carry an id line. */
  async heartbeatWithId(request, handler) {
    const response = await handler(request);
    return isStream(response) ? rewriteBlocks(response, (block) => (block.startsWith('event: heartbeat') ? `id: 1\n${block}` : block)) : response;
  },

  /** Error answers are plain text, not the typed JSON body. */
  async untypedErrors(request, handler) {
    const response = await handler(request);
    if (response.status < 400) return response;
    return new Response(`Error ${response.status}`, { status: response.status, headers: { 'content-type': 'text/plain' } });
  },

  /** Follow answers lack the Lifeline-Heartbeat header. */
  async noHeartbeatHeader(request, handler) {
    const response = await handler(request);
    if (!response.headers.has('lifeline-heartbeat')) return response;
    const headers = new Headers(response.headers);
    headers.delete('lifeline-heartbeat');
    return withBody(response, response.body, headers);
  },

  /** Submissions reach the server without their `context` (1.2): the agent is never handed it. */
  async dropsContext(request, handler) {
    return handler(await withSubmitBody(request, (body) => ({ content: body['content'] })));
  },

  /** A 1.1 server: its conformance agent knows no `echoContext` step (the turn fails on it). */
  async protocol11(request, handler) {
    return handler(await withSubmitBody(request, (body) => JSON.parse(JSON.stringify(body).replaceAll('"echoContext":true', '"stepOf12":true')) as Record<string, unknown>));
  },

  /** Turn objects in replay and list answers leave out `continues` (1.2). */
  async dropsContinues(request, handler) {
    const response = await handler(request);
    if (request.method !== 'GET' || !(response.headers.get('content-type') ?? '').startsWith('application/json')) return response;
    const body = (await response.json()) as { turn?: Record<string, unknown>; turns?: Record<string, unknown>[] };
    for (const turn of [body.turn, ...(body.turns ?? [])]) if (turn) delete turn['continues'];
    return withBody(response, JSON.stringify(body));
  },
} satisfies Record<string, Breakage>;

/** The request with its submit body (when it is one) rewritten. */
async function withSubmitBody(request: Request, rewrite: (body: Record<string, unknown>) => Record<string, unknown>): Promise<Request> {
  if (request.method !== 'POST' || !new URL(request.url).pathname.endsWith('/messages')) return request;
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new Request(request, { body: text });
  }
  const headers = new Headers(request.headers);
  headers.delete('content-length');
  const rewritten = typeof body === 'object' && body !== null && !Array.isArray(body) ? JSON.stringify(rewrite(body as Record<string, unknown>)) : text;
  return new Request(request.url, { method: 'POST', headers, body: rewritten, signal: request.signal });
}
