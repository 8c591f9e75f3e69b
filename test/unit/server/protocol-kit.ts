/**
 * What every part of the protocol suite shares: a server over the log under test (its
 * `waitForEvents` counted, so a test can see the follow loop's waits settle), the
 * submit and replay shortcuts, and the assertions on error bodies and integrity.
 */
import { afterEach, expect } from 'vitest';
import { errorBodySchema, type ServerErrorCode, type SubmitAnswer, type TurnEvent, type TurnObject } from '../../../src/protocol/schemas.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import {
  replayAll,
  startTestServer,
  submitMessage,
  textOf,
  waitForTurnEnd,
  type TestServer,
  type TestServerOptions,
} from '../../fixtures/server.js';

/** What a log under test is built with; a log that keeps its own clock may ignore `now`. */
export interface ProtocolLogContext {
  now: () => number;
  retentionMs: number;
}

export type MakeProtocolLog = (context: ProtocolLogContext) => Promise<{ log: TurnLog; cleanup(): Promise<void> }>;

export interface ProtocolSuiteOptions {
  /** Run the retention tests, which need a log that honours `context.now`. Default true. */
  retention?: boolean;
}

const TURN_LOG_METHODS = [
  'createTurn',
  'getTurn',
  'append',
  'read',
  'waitForEvents',
  'listTurns',
  'getIdempotency',
  'putIdempotencyIfAbsent',
  'completeIdempotency',
  'deleteIdempotency',
  'requestCancel',
  'isCancelRequested',
  'close',
] as const satisfies readonly (keyof TurnLog)[];

/** A log that delegates to `log`, with some methods replaced. */
function wrapLog(log: TurnLog, overrides: Partial<TurnLog>): TurnLog {
  const wrapped = {} as Record<string, unknown>;
  for (const name of TURN_LOG_METHODS) wrapped[name] = overrides[name] ?? (log[name] as (...args: never[]) => unknown).bind(log);
  return wrapped as unknown as TurnLog;
}

export const LONG_TEXT = 'Lifeline keeps every token: 日本語のテキスト, emoji 😀👍🏽, accents éàü, and plain ASCII. '.repeat(6);

export interface Setup extends TestServer {
  errors: unknown[];
  /** `waitForEvents` calls not yet settled (the follow loop's waiters). */
  pendingWaits(): number;
}

export async function expectError(response: Response, status: number, code: ServerErrorCode): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = errorBodySchema.parse(await response.json());
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

export function post(url: string, body: string | undefined, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body }),
  });
}

export async function expectSha(events: readonly TurnEvent[]): Promise<void> {
  const end = events.at(-1);
  if (end?.type !== 'turn.end') throw new Error('last event is not turn.end');
  const text = textOf(events);
  expect(end.textLength).toBe(text.length);
  expect(end.textSha256).toBe(await sha256Hex(text));
}

export function seqs(events: readonly TurnEvent[]): number[] {
  return events.map((event) => event.seq);
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}


type SetupOptions = TestServerOptions & { wrap?: (inner: TurnLog) => Partial<TurnLog>; clock?: () => number };

/** The shortcuts each part of the suite uses; made once per `describe`, which it cleans up after each test. */
export interface ProtocolKit {
  suiteOptions: ProtocolSuiteOptions;
  setup(options?: SetupOptions): Promise<Setup>;
  submitted(server: Setup, conversationId?: string, content?: string | Record<string, unknown>): Promise<SubmitAnswer>;
  finishedTurn(server: Setup): Promise<{ answer: SubmitAnswer; events: TurnEvent[]; turn: TurnObject }>;
}

/** Call inside a `describe`: registers the cleanup of every server and log a test made. */
export function protocolKit(makeLog: MakeProtocolLog, suiteOptions: ProtocolSuiteOptions): ProtocolKit {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup(options: SetupOptions = {}): Promise<Setup> {
    const now = options.clock ?? Date.now;
    const made = await makeLog({ now, retentionMs: options.retentionMs ?? 24 * 60 * 60 * 1000 });
    cleanups.push(() => made.cleanup());
    let pending = 0;
    const base = made.log;
    const log = wrapLog(base, {
      ...options.wrap?.(base),
      waitForEvents: async (turnId, after, waitOptions) => {
        pending++;
        try {
          await base.waitForEvents(turnId, after, waitOptions);
        } finally {
          pending--;
        }
      },
    });
    const { wrap: _wrap, clock: _clock, ...serverOptions } = options;
    const server = await startTestServer({ ...serverOptions, store: log, now });
    cleanups.push(() => server.close());
    return { ...server, pendingWaits: () => pending };
  }

  async function submitted(server: Setup, conversationId = 'conv-1', content: string | Record<string, unknown> = 'Hello'): Promise<SubmitAnswer> {
    return submitMessage(server.baseUrl, conversationId, content);
  }

  async function finishedTurn(server: Setup): Promise<{ answer: SubmitAnswer; events: TurnEvent[]; turn: TurnObject }> {
    const answer = await submitted(server);
    await waitForTurnEnd(server.log, answer.turnId);
    const { events, turn } = await replayAll(server.baseUrl, answer.turnId);
    return { answer, events, turn };
  }

  return { suiteOptions, setup, submitted, finishedTurn };
}
