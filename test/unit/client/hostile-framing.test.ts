/**
 * Hostile framing on the event stream: unterminated, cut, duplicated, skipped, unknown,
 * invalid and foreign events, size caps and poisoned JSON (docs/faults.md rows 3, 4, 14, 32, 33).
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';
import { expectClean, followToEnd, FULL_TEXT, json, openStream, run, runCleanups, secondCursor, TEXT } from './support/hostile-rig.js';

afterEach(runCleanups);

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
    const { followed, final } = await followToEnd(server);
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
          if (!res.write(piece)) {
            // Both listeners go once either fires: a 'close' listener left per wait piled up past Node's warning.
            await new Promise<void>((resolve) => {
              const done = (): void => {
                res.off('drain', done).off('close', done);
                resolve();
              };
              res.on('drain', done).on('close', done);
            });
          }
        }
        res.end();
      },
    });
    const { followed, final } = await followToEnd(server, { limits });
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
    const { final } = await followToEnd(server, { limits: { maxTurnTextLength: 6 } });
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
    const { final } = await followToEnd(server);
    expect(final.text).toBe('ab');
    expect(final.actions[0]?.output).toEqual({ ok: 1 });
    expect(Object.keys(final.actions[0]?.output as object)).toEqual(['ok']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
});
