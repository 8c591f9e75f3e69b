/**
 * How the client answers the server's answers (FAULTS rows 9–12 and the protocol's
 * status codes): 204 ends through replay, wrong content types and 5xx back off with
 * Retry-After honoured, 401/403 re-read headers once, 404/410 fail visibly and keep
 * the partial text, `resume_point_ahead` rebuilds from seq 0.
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import type { LifelineOptions, TurnSnapshot } from '../../../src/types.js';
import { follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN, type ScriptedServerOptions } from './support/scripted-server.js';

const TEXT = ['Hel', 'lo ', '世界', '😀', '!'];

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function error(res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { code, message: code } }));
}

/** First stream: the first `count` events, then a clean close (a cut). */
function firstEvents(res: ServerResponse, log: TurnEvent[], count: number): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(log.slice(0, count).map(sse).join(''));
}

async function setup(server: Omit<ScriptedServerOptions, 'log'> & { log?: TurnEvent[] }, options: Partial<LifelineOptions> = {}) {
  const log = server.log ?? (await buildLog(TEXT));
  const scripted = await startScriptedServer({ ...server, log });
  cleanup.push(() => scripted.close());
  const followed = follow(scripted.baseUrl, TURN, options);
  cleanup.push(() => followed.client.dispose());
  const statuses = new Set<TurnSnapshot['status']>();
  followed.turn.subscribe(() => statuses.add(followed.turn.getSnapshot().status));
  return { server: scripted, followed, log, statuses };
}

describe('204 (row 9)', () => {
  it('on resume: replays the rest and asks for no more streams', async () => {
    const { server, followed, log } = await setup({
      stream: ({ index, res }) => {
        if (index === 0) return firstEvents(res, log, 3);
        res.writeHead(204).end();
      },
      log: await buildLog(TEXT),
    });
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe(TEXT.join(''));
    expect(followed.applied).toEqual(range(log.length));
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, '3']);
    expect(server.replays.map((request) => request.cursor)).toEqual(['3']);
    expect(final.recovered).toEqual(expect.objectContaining({ path: 'replay', events: log.length - 3 }));
  });
});

describe('a replay page behind its turn row', () => {
  it('goes back to the stream when the page is empty but the row counts more (the turn ended between the two reads)', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup({
      log,
      stream: ({ index, res }) => (index === 0 ? void res.writeHead(204).end() : 'default'),
      replay: ({ index, res }) => {
        if (index > 0) return 'default';
        res.writeHead(200, { 'content-type': 'application/json' });
        const turn = { id: TURN, conversationId: 'conv_1', messageId: 'msg_1', status: 'complete', lastSeq: log.length, createdAt: '2025-01-01T00:00:00.000Z', updatedAt: '2025-01-01T00:00:00.000Z' };
        res.end(JSON.stringify({ turn, events: [], hasMore: false }));
      },
    });
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final).toMatchObject({ status: 'complete', text: TEXT.join('') });
    expect(followed.applied).toEqual(range(log.length));
    expect(server.replays).toHaveLength(1);
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, undefined]);
    expect(followed.ofType('failed')).toEqual([]);
  });
});

describe('backoff answers (row 10)', () => {
  it('retries a 200 text/html captive portal and 5xx with backoff, visibly, then resumes', async () => {
    const log = await buildLog(TEXT);
    const { server, followed, statuses } = await setup({
      log,
      stream: ({ index, res }) => {
        if (index === 0) return firstEvents(res, log, 2);
        if (index === 1) {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<html>Please log in to the Wi-Fi</html>');
          return;
        }
        if (index === 2) return error(res, 500, 'internal_error');
        return 'default';
      },
    });
    const final = await followed.turn.completed;
    expect(final.text).toBe(TEXT.join(''));
    expect(followed.ofType('disconnect').map((d) => d.cause.code)).toEqual(['network_error', 'unexpected_content_type', 'http_error']);
    expect(followed.ofType('retry').map((d) => d.cause?.code)).toEqual(['network_error', 'unexpected_content_type', 'http_error']);
    expect(statuses.has('reconnecting')).toBe(true);
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, '2', '2', '2']);
  });

  it('honours Retry-After on 503 and shows when the next attempt is due', async () => {
    const log = await buildLog(TEXT);
    const { followed } = await setup({
      log,
      stream: ({ index, res }) => {
        if (index === 0) return firstEvents(res, log, 2);
        return error(res, 503, 'overloaded', { 'retry-after': '7' });
      },
    });
    await expect.poll(() => followed.ofType('retry').find((d) => d.cause?.code === 'server_unavailable')).toBeDefined();
    const retry = followed.ofType('retry').find((d) => d.cause?.code === 'server_unavailable')!;
    expect(retry.delayMs).toBeGreaterThanOrEqual(7_000);
    await expect.poll(() => followed.turn.getSnapshot().connection.state).toBe('waiting');
    const snapshot = followed.turn.getSnapshot();
    expect(snapshot.status).toBe('reconnecting');
    expect(snapshot.connection.nextRetryAt).toBe(retry.at + retry.delayMs);
    expect(snapshot.text).toBe('Hel');
  });

  it('replays when reconnecting keeps failing while the replay endpoint answers', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup({
      log,
      stream: ({ index, res }) => {
        if (index === 0) return firstEvents(res, log, 2);
        return error(res, 502, 'bad_gateway');
      },
    });
    const final = await followed.turn.completed;
    expect(final.text).toBe(TEXT.join(''));
    expect(server.streams).toHaveLength(4);
    expect(server.replays.map((request) => request.cursor)).toEqual(['2']);
  });
});

describe('auth (row 11)', () => {
  it('re-reads the headers once after a 401 and never sends the stale token again', async () => {
    const log = await buildLog(TEXT);
    let token = 'old';
    const { server, followed } = await setup(
      {
        log,
        stream: ({ index, request, res }) => {
          if (index === 0) return firstEvents(res, log, 2);
          if (request.headers.authorization !== 'Bearer new') {
            token = 'new'; // the app refreshes its token meanwhile
            return error(res, 401, 'unauthorized');
          }
          return 'default';
        },
      },
      { headers: async () => ({ authorization: `Bearer ${token}` }) },
    );
    const final = await followed.turn.completed;
    expect(final.text).toBe(TEXT.join(''));
    expect(followed.ofType('auth-refresh')).toHaveLength(1);
    expect(server.streams.map((request) => request.headers.authorization)).toEqual(['Bearer old', 'Bearer old', 'Bearer new']);
  });

  it('fails visibly on a second 401 in a row and keeps the partial text', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup(
      {
        log,
        stream: ({ index, res }) => {
          if (index === 0) return firstEvents(res, log, 3);
          return error(res, index === 1 ? 401 : 403, index === 1 ? 'unauthorized' : 'forbidden');
        },
      },
      { headers: { authorization: 'Bearer revoked' } },
    );
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('forbidden');
    expect(final.text).toBe('Hello ');
    expect(server.streams).toHaveLength(3);
    expect(followed.ofType('failed')).toEqual([expect.objectContaining({ scope: 'stream', id: TURN })]);
  });
});

describe('gone (row 12)', () => {
  for (const [status, code] of [
    [404, 'turn_not_found'],
    [410, 'turn_expired'],
  ] as const) {
    it(`fails with ${code} on a ${status} resume, keeps the partial text, does not retry`, async () => {
      const log = await buildLog(TEXT);
      const { server, followed } = await setup({
        log,
        stream: ({ index, res }) => (index === 0 ? firstEvents(res, log, 3) : error(res, status, code)),
      });
      const final = await followed.turn.completed;
      expect(final.status).toBe('failed');
      expect(final.error?.code).toBe(code);
      expect(final.error?.kind).toBe('transport');
      expect(final.text).toBe('Hello ');
      expect(server.streams).toHaveLength(2);
      expect(server.replays).toHaveLength(0);
      // Folded as failed in storage, with its partial text.
      await expect.poll(async () => (await followed.store.loadTurn(TURN))?.record).toEqual(
        expect.objectContaining({ status: 'failed', text: 'Hello ', error: expect.objectContaining({ code }) }),
      );
    });
  }

  it('fails with turn_expired when the replay answers 410', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup({
      log,
      stream: ({ index, res }) => (index === 0 ? firstEvents(res, log, 2) : void res.writeHead(204).end()),
      replay: ({ res }) => error(res, 410, 'turn_expired'),
    });
    const final = await followed.turn.completed;
    expect(final.error?.code).toBe('turn_expired');
    expect(final.text).toBe('Hel');
    expect(server.replays).toHaveLength(1);
  });
});

describe('resume_point_ahead', () => {
  it('rebuilds the turn from seq 0 when the server log is behind the client', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup({
      log,
      stream: ({ index, res }) => {
        if (index === 0) return firstEvents(res, log, 3);
        if (index === 1) return error(res, 400, 'resume_point_ahead');
        return 'default';
      },
    });
    const final = await followed.turn.completed;
    expect(final.text).toBe(TEXT.join(''));
    expect(server.replays.map((request) => request.cursor)).toEqual(['0']);
    expect(followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['seq_mismatch']);
  });
});

describe('replay pages too large to read', () => {
  it('asks again with half the limit, down to a page that fits, and completes', async () => {
    const log = await buildLog(TEXT);
    const { server, followed } = await setup({
      log,
      stream: ({ res }) => void res.writeHead(204).end(),
      replay: ({ request, res }) => {
        const limit = Number(new URL(request.url, 'http://localhost').searchParams.get('limit'));
        if (limit <= 250) return 'default';
        // Over the client's 8 MiB read cap: bounded memory, so this page cannot be read at all.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ pad: 'x'.repeat(9 * 1024 * 1024) }));
      },
    });
    const final = await followed.turn.completed;
    expect(final).toMatchObject({ status: 'complete', text: TEXT.join('') });
    expect(server.replays.map((request) => new URL(request.url, 'http://localhost').searchParams.get('limit'))).toEqual(['1000', '500', '250']);
    expect(followed.ofType('retry')).toEqual([]);
  });
});
