/**
 * Odd input on the event stream, as our own vectors after the cases of web-platform-tests'
 * `eventsource/` (field parsing, BOM, CR/LF/CRLF, comments, empty blocks, bogus `retry:`/`id:`),
 * plus docs/faults.md rows 5-8.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { range, FAST_RETRY } from './support/follow.js';
import { buildLog, sse, startScriptedServer } from './support/scripted-server.js';
import { expectClean, followToEnd, FULL_TEXT, json, openStream, run, runCleanups, secondCursor, TEXT } from './support/hostile-rig.js';

afterEach(runCleanups);

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
    const { followed, final } = await followToEnd(server);
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
    const { followed, final } = await followToEnd(server);
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
