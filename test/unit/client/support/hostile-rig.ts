/**
 * What the hostile-input tests share: each vector is served raw on the first stream
 * request and the clean log after it, so every turn must still end byte-identical (T=)
 * with seqs applied 1..N (J0).
 */
import { expect } from 'vitest';
import type { ServerResponse } from 'node:http';
import type { TurnEvent } from '../../../../src/protocol/schemas.js';
import type { LifelineOptions } from '../../../../src/types.js';
import { follow, range } from './follow.js';
import { buildLog, startScriptedServer, TURN, type ScriptedServer, type ScriptedServerOptions } from './scripted-server.js';

export const TEXT = ['Hel', 'lo ', '世界', '😀', '👩‍👩‍👧!'];
export const FULL_TEXT = TEXT.join('');

/** Steps run after each test, last added first. */
export const cleanup: (() => Promise<void> | void)[] = [];

/** For `afterEach`: closes the servers and disposes the clients `run` made. */
export async function runCleanups(): Promise<void> {
  for (const step of cleanup.splice(0).reverse()) await step();
}

/** An event as its data line carries it. */
export function json(event: TurnEvent): string {
  return JSON.stringify(event);
}

/** Answers 200 text/event-stream: the vector's body follows. */
export function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/** Serves `body(log)` raw on the first stream request, then the clean log. */
export async function run(
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
  const { followed, final } = await followToEnd(server, options);
  await followed.iterated;
  return { server, followed, final, log };
}

/** Follows the scripted server's turn with a fresh client until the turn settles; both closed after the test. */
export async function followToEnd(server: ScriptedServer, options: Partial<LifelineOptions> = {}) {
  cleanup.push(() => server.close());
  const followed = follow(server.baseUrl, TURN, options);
  cleanup.push(() => followed.client.dispose());
  return { followed, final: await followed.turn.completed };
}

/** The `Last-Event-ID` of the second stream request: what the client applied from the first. */
export function secondCursor(server: { streams: { cursor: string | undefined }[] }): string | undefined {
  return server.streams[1]?.cursor;
}

/** The turn ended complete with the exact text, every seq applied once, in order (T=, J0). */
export function expectClean(result: Awaited<ReturnType<typeof run>>): void {
  expect(result.final.status).toBe('complete');
  expect(result.final.text).toBe(FULL_TEXT);
  expect(result.followed.applied).toEqual(range(result.log.length));
}

