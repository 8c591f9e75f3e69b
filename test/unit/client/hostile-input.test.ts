/**
 * Hostile and odd input on the event stream, as our own vectors after the cases of
 * web-platform-tests' `eventsource/` (field parsing, BOM, CR/LF/CRLF, comments, empty
 * blocks, bogus `retry:`/`id:`, unterminated last event), plus FAULTS rows 3–8, 14, 32
 * and 33. Each vector is served raw on the first stream request; later requests get
 * the clean log, so every turn must end byte-identical (T=) with seqs applied 1..N (J0).
 */
import './support/dom-shim.js';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import type { LifelineOptions } from '../../../src/types.js';
import { follow, range, FAST_RETRY } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN, type ScriptedServerOptions } from './support/scripted-server.js';

const TEXT = ['Hel', 'lo ', '世界', '😀', '👩‍👩‍👧!'];
const FULL_TEXT = TEXT.join('');

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function json(event: TurnEvent): string {
  return JSON.stringify(event);
}

function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/** Serves `body(log)` raw on the first stream request, then the clean log. */
async function run(
  body: (log: TurnEvent[]) => string | Buffer,
  options: Partial<LifelineOptions> = {},
  serverOptions: Partial<ScriptedServerOptions> & { log?: TurnEvent[] } = {},
) {
  const log = serverOptions.log ?? (await buildLog(TEXT));
  const server = await startScriptedServer({
    log,
    stream: ({ index, res }) => {
      if (index > 0) return 'default';
      openStream(res);
      res.end(body(log));
    },
    ...serverOptions,
  });
  cleanup.push(() => server.close());
  const followed = follow(server.baseUrl, TURN, options);
  cleanup.push(() => followed.client.dispose());
  const final = await followed.turn.completed;
  await followed.iterated;
  return { server, followed, final, log };
}

/** The `Last-Event-ID` of the second stream request: what the client applied from the first. */
function secondCursor(server: { streams: { cursor: string | undefined }[] }): string | undefined {
  return server.streams[1]?.cursor;
}

function expectClean(result: Awaited<ReturnType<typeof run>>): void {
  expect(result.final.status).toBe('complete');
  expect(result.final.text).toBe(FULL_TEXT);
  expect(result.followed.applied).toEqual(range(result.log.length));
}

describe('field parsing', () => {
  it('accepts fields without the space after the colon', async () => {
    const result = await run((log) => log.slice(0, 3).map((e) => `id:${e.seq}\nevent:${e.type}\ndata:${json(e)}\n\n`).join(''));
    expectClean(result);
    expect(secondCursor(result.server)).toBe('3');
  });

  it('strips exactly one leading space (JSON tolerates the second)', async () => {
    const result = await run((log) => log.slice(0, 3).map((e) => `data:  ${json(e)}\n\n`).join(''));
    expectClean(result);
    expect(secondCursor(result.server)).toBe('3');
  });

  it('ignores unknown fields and lines without a colon', async () => {
    const result = await run((log) => log.slice(0, 2).map((e) => `foo: bar\nid\nbaz\ndata: ${json(e)}\nqux:\n\n`).join(''));
    expectClean(result);
    expect(secondCursor(result.server)).toBe('2');
  });

  it('joins several data lines with a newline', async () => {
    const result = await run((log) =>
      log
        .slice(0, 2)
        .map((e) => {
          const text = json(e);
          const cut = text.indexOf(',');
          return `data: ${text.slice(0, cut + 1)}\ndata: ${text.slice(cut + 1)}\n\n`;
        })
        .join(''),
    );
    expectClean(result);
    expect(secondCursor(result.server)).toBe('2');
  });

  it('ignores one leading byte order mark', async () => {
    const result = await run((log) => `\uFEFF${log.slice(0, 3).map(sse).join('')}`);
    expectClean(result);
    expect(secondCursor(result.server)).toBe('3');
  });

  it('treats a second byte order mark as part of the field name, and fills the hole it leaves', async () => {
    const result = await run((log) => `\uFEFF\uFEFFdata: ${json(log[0]!)}\n\n${log.slice(1, 3).map(sse).join('')}`);
    expectClean(result);
    expect(result.followed.ofType('gap')).toEqual([expect.objectContaining({ expected: 1, got: 2 })]);
    expect(result.server.replays[0]?.cursor).toBe('0');
  });
});

describe('line endings and chunking', () => {
  for (const [name, eol] of [
    ['CR', '\r'],
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ] as const) {
    it(`parses ${name} line endings`, async () => {
      const result = await run((log) => log.slice(0, 4).map((e) => `id: ${e.seq}${eol}event: ${e.type}${eol}data: ${json(e)}${eol}${eol}`).join(''));
      expectClean(result);
      expect(secondCursor(result.server)).toBe('4');
    });
  }

  it('parses mixed line endings in one stream', async () => {
    // One kind per event; a CR followed by LF would be one CRLF, so kinds never meet that way inside an event.
    const eols = ['\r', '\n', '\r\n'];
    const result = await run((log) =>
      log
        .slice(0, 5)
        .map((e, i) => {
          const eol = eols[i % 3] as string;
          return `id: ${e.seq}${eol}data: ${json(e)}${eol}${eol}`;
        })
        .join(''),
    );
    expectClean(result);
    expect(secondCursor(result.server)).toBe('5');
  });

  it('reassembles a stream written one byte at a time, emoji and CJK split across chunks (row 5)', async () => {
    const log = await buildLog(TEXT);
    const bytes = Buffer.from(`retry: 1000\r\n\r\n${log.map(sse).join('').replaceAll('\n\n', '\r\n\r\n')}`, 'utf8');
    const server = await startScriptedServer({
      log,
      stream: async ({ res }) => {
        openStream(res);
        for (const byte of bytes) {
          res.write(Buffer.of(byte));
          await new Promise((resolve) => setImmediate(resolve));
        }
        res.end();
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe(FULL_TEXT);
    expect(followed.applied).toEqual(range(log.length));
    expect(server.streams).toHaveLength(1);
  });
});

describe('blocks that carry nothing (row 6)', () => {
  it('ignores comments, empty blocks, event without data, retry-only blocks and heartbeats: cursor not advanced', async () => {
    const result = await run(
      (log) => `: comment\n\n\n\n${sse(log[0]!)}event: delta\n\nretry: 5\n\n:\nevent: heartbeat\ndata: {}\n\nid: 99\n\n${sse(log[1]!)}: tail\n\n`,
    );
    expectClean(result);
    expect(secondCursor(result.server)).toBe('2');
    expect(result.followed.ofType('protocol-error')).toEqual([]);
  });
});

describe('bogus retry and id (rows 7, 8)', () => {
  it('paces hostile retry values by the client policy: no hot loop, no stall', async () => {
    const hostile = ['retry: -1', 'retry: 99999999999', 'retry: 10x', 'retry: 0'];
    const log = await buildLog(TEXT);
    const server = await startScriptedServer({
      log,
      stream: ({ index, res }) => {
        if (index >= hostile.length) return 'default';
        openStream(res);
        res.end(`${hostile[index]}\n\n`);
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.text).toBe(FULL_TEXT);
    const delays = followed.ofType('retry').map((d) => d.delayMs);
    expect(delays.length).toBeGreaterThan(0);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(FAST_RETRY.maxDelayMs);
    }
    // Two clean closes in a row without an event send the client to the replay endpoint.
    expect(server.replays.length).toBeGreaterThanOrEqual(1);
  });

  it('never uses a wire id as the cursor: NUL, non-Latin-1, empty and non-numeric ids are ignored', async () => {
    const ids = ['\u0000', '日本', '', 'abc', '999999'];
    const result = await run((log) => log.slice(0, 5).map((e, i) => `id: ${ids[i]}\nevent: ${e.type}\ndata: ${json(e)}\n\n`).join(''));
    expectClean(result);
    // The request after the bogus ids reached the server with the client's own, valid cursor.
    expect(secondCursor(result.server)).toBe('5');
    for (const request of result.server.streams) expect(request.cursor ?? '0').toMatch(/^[0-9]{1,15}$/);
  });
});

describe('framing faults (rows 3, 4, 14)', () => {
  it('never applies an unterminated final event (row 4)', async () => {
    const result = await run((log) => `${log.slice(0, 2).map(sse).join('')}id: 3\nevent: delta\ndata: ${json(log[2]!)}`);
    expectClean(result);
    expect(secondCursor(result.server)).toBe('2');
  });

  it('treats a clean close before turn.end as a cut, and replays after two empty ones in a row (row 3)', async () => {
    const log = await buildLog(TEXT);
    const server = await startScriptedServer({
      log,
      stream: ({ index, res }) => {
        openStream(res);
        if (index === 0) res.end(log.slice(0, 2).map(sse).join(''));
        else res.end('retry: 1000\n\n');
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe(FULL_TEXT);
    expect(followed.applied).toEqual(range(log.length));
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, '2', '2']);
    expect(server.replays.map((request) => request.cursor)).toEqual(['2']);
    expect(final.recovered).toEqual(expect.objectContaining({ path: 'replay', events: log.length - 2 }));
    expect(followed.ofType('disconnect').map((d) => d.cause.message)).toEqual(Array(3).fill('Closed before turn.end.'));
  });

  it('drops duplicate seqs and fills a skipped one from the replay endpoint (row 14)', async () => {
    const result = await run((log) => [log[0]!, log[1]!, log[1]!, log[0]!, log[2]!, log[4]!, log[5]!].map(sse).join(''));
    expectClean(result);
    expect(result.followed.ofType('duplicate').map((d) => d.seq)).toEqual([2, 1]);
    expect(result.followed.ofType('gap')).toEqual([expect.objectContaining({ expected: 4, got: 5 })]);
    expect(result.server.replays.map((request) => request.cursor)).toEqual(['3']);
  });

  it('skips an unknown event type but consumes its seq (forward compatibility)', async () => {
    const clean = await buildLog(TEXT);
    const unknown = { turnId: TURN, seq: 3, type: 'thinking', text: 'hmm' } as unknown as TurnEvent;
    const log = [clean[0]!, clean[1]!, unknown, ...clean.slice(2).map((e) => ({ ...e, seq: e.seq + 1 }) as TurnEvent)];
    const result = await run((l) => l.slice(0, 5).map(sse).join(''), {}, { log });
    expect(result.final.text).toBe(FULL_TEXT);
    expect(result.followed.applied).toEqual(range(log.length).filter((seq) => seq !== 3));
    expect(result.followed.ofType('unknown-event').map((d) => d.eventType)).toEqual(['thinking']);
    expect(secondCursor(result.server)).toBe('5');
  });

  it('drops the connection on invalid JSON and resumes from the last applied seq', async () => {
    const result = await run((log) => `${sse(log[0]!)}data: {not json\n\n${sse(log[1]!)}`);
    expectClean(result);
    expect(result.followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['invalid_event']);
    expect(secondCursor(result.server)).toBe('1');
  });

  it("refuses an event of another turn and resumes from the client's cursor", async () => {
    const result = await run((log) => `${sse(log[0]!)}${sse({ ...log[1]!, turnId: 'someone_else' })}`);
    expectClean(result);
    expect(result.followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['seq_mismatch']);
    expect(secondCursor(result.server)).toBe('1');
  });
});

describe('size caps (row 32)', () => {
  const limits = { maxEventSize: 1024 };

  it('cuts an endless line with line_too_long before buffering it, then resumes', async () => {
    const log = await buildLog(TEXT);
    let written = 0;
    let aborted = false;
    const server = await startScriptedServer({
      log,
      stream: async ({ index, res }) => {
        if (index > 0) return 'default';
        openStream(res);
        res.write(log.slice(0, 2).map(sse).join(''));
        res.on('close', () => (aborted = !res.writableFinished));
        const piece = 'x'.repeat(16 * 1024);
        // Up to 64 MiB with no newline: the client must give up long before.
        while (written < 64 * 1024 * 1024 && !res.destroyed) {
          written += piece.length;
          if (!res.write(piece)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
        }
        res.end();
      },
    });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { limits });
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    await followed.iterated;
    expect(final.text).toBe(FULL_TEXT);
    expect(followed.applied).toEqual(range(log.length));
    expect(followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['line_too_long']);
    expect(aborted).toBe(true);
    expect(written).toBeLessThan(8 * 1024 * 1024);
    expect(server.streams.map((request) => request.cursor)).toEqual([undefined, '2']);
  });

  it('refuses an event made of many short data lines with event_too_large', async () => {
    const result = await run((log) => `${sse(log[0]!)}${'data: 0123456789\n'.repeat(1000)}\n${sse(log[1]!)}`, { limits });
    expectClean(result);
    expect(result.followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['event_too_large']);
    expect(secondCursor(result.server)).toBe('1');
  });

  it('refuses one data line over maxEventSize code units with event_too_large', async () => {
    const result = await run((log) => `${sse(log[0]!)}data: ${JSON.stringify({ ...log[1]!, text: 'y'.repeat(2000) })}\n\n`, { limits });
    expectClean(result);
    expect(result.followed.ofType('protocol-error').map((d) => d.error.code)).toEqual(['event_too_large']);
    expect(secondCursor(result.server)).toBe('1');
  });

  it('fails a turn whose text passes maxTurnTextLength, keeping what arrived', async () => {
    const log = await buildLog(TEXT);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN, { limits: { maxTurnTextLength: 6 } });
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('turn_too_large');
    expect(final.text).toBe('Hello ');
    expect(server.streams).toHaveLength(1);
  });
});

describe('poisoned JSON (row 33)', () => {
  it('strips __proto__, constructor and prototype keys from action payloads', async () => {
    const output = JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"ok":1}') as Record<string, never>;
    const log = await buildLog(['a', { action: { callId: 'c1', name: 'propose_personas', status: 'completed', output } }, 'b']);
    const server = await startScriptedServer({ log });
    cleanup.push(() => server.close());
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.text).toBe('ab');
    expect(final.actions[0]?.output).toEqual({ ok: 1 });
    expect(Object.keys(final.actions[0]?.output as object)).toEqual(['ok']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
});
