/**
 * What the delivery suite's tests share (test/unit/server/delivery-suite.ts): a reference
 * server over the store under test with a fake clock, an agent the test drives, the
 * operator's token and audit, and the requests of sections 10 and 11. Call
 * `createDeliveryKit` inside a `describe`: it registers the teardown of what it starts.
 */
import { afterEach, expect } from 'vitest';
import { errorBodySchema, replayAnswerSchema, turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { operatorListAnswerSchema, type OperatorTurn } from '../../../src/protocol/server-schemas.js';
import type { OperatorAuditEntry } from '../../../src/server/http/operator-access.js';
import type { TurnLog } from '../../../src/server/log/turn-log.js';
import { controlledAgent, type ControlledAgent } from '../../fixtures/agents.js';
import { newKey, startTestServer, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';

export interface DeliveryLog {
  log: TurnLog;
  cleanup(): Promise<void>;
  /**
   * Work the store did so far (store reads, or Redis commands): listings are measured
   * with it. Absent: the flat-work test is skipped for this store.
   */
  work?(): Promise<number>;
  /** Wraps the log so `work` sees what the handler does through it. Default: the log itself. */
  wrapped?: TurnLog;
}

export type MakeDeliveryLog = (context: { now: () => number }) => Promise<DeliveryLog>;

export const TOKEN = 'Bearer operator-secret';
export const MINUTE = 60_000;

export interface Setup {
  server: TestServer;
  agent: ControlledAgent;
  audits: OperatorAuditEntry[];
  clock: { advance(ms: number): void };
  store: DeliveryLog;
}

export function createDeliveryKit(makeLog: MakeDeliveryLog) {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup(options: { operator?: boolean; log?: DeliveryLog; now?: () => number } = {}): Promise<Setup> {
    let offset = 0;
    const now = options.now ?? ((): number => Date.now() + offset);
    const store = options.log ?? (await makeLog({ now }));
    if (!options.log) cleanups.push(() => store.cleanup());
    const agent = controlledAgent();
    const audits: OperatorAuditEntry[] = [];
    const server = await startTestServer({
      store: store.wrapped ?? store.log,
      agent: agent.agent,
      now,
      cancelPollMs: 20,
      authorize: (request) => request.headers.get('x-user') ?? 'alice',
      ...(options.operator === false
        ? {}
        : {
            authorizeOperator: (request: Request) => {
              if (request.headers.get('authorization') !== TOKEN) throw new Error('refused');
              return 'support-1';
            },
            audit: (entry: OperatorAuditEntry) => void audits.push(entry),
          }),
    });
    cleanups.push(() => server.close());
    return { server, agent, audits, store, clock: { advance: (ms) => (offset += ms) } };
  }

  async function submit(server: TestServer, user: string, conversationId: string, content: string): Promise<string> {
    const response = await fetch(`${server.baseUrl}/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newKey(), 'x-user': user },
      body: JSON.stringify({ content }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { turnId: string }).turnId;
  }

  /** One turn of `user`, produced to its end with `text`. */
  async function endedTurn(s: Setup, user: string, conversationId: string, text: string): Promise<{ turnId: string; end: TurnEvent }> {
    const turnId = await submit(s.server, user, conversationId, `ask ${text}`);
    const control = await s.agent.nextTurn();
    await control.delta(text);
    await control.end();
    await waitForTurnEnd(s.server.log, turnId);
    const response = await fetch(`${s.server.baseUrl}/turns/${turnId}`, { headers: { 'x-user': user } });
    const events = replayAnswerSchema.parse(await response.json()).events.map((event) => turnEventSchema.parse(event));
    return { turnId, end: events.at(-1) as TurnEvent };
  }

  function receipt(s: Setup, user: string, turnId: string, body: unknown): Promise<Response> {
    return fetch(`${s.server.baseUrl}/turns/${turnId}/delivered`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `receipt-test-${turnId}`, 'x-user': user },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  function operator(s: Setup, path: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${s.server.baseUrl}/operator${path}`, { ...init, headers: { authorization: TOKEN, 'content-type': 'application/json', ...init.headers } });
  }

  async function list(s: Setup, query: string): Promise<OperatorTurn[]> {
    const response = await operator(s, `/turns?${query}`);
    expect(response.status).toBe(200);
    return operatorListAnswerSchema.parse(await response.json()).turns;
  }

  async function expectCode(response: Response, status: number, code: string): Promise<void> {
    expect(response.status).toBe(status);
    expect(errorBodySchema.parse(await response.json()).error.code).toBe(code);
  }

  return { setup, submit, endedTurn, receipt, operator, list, expectCode };
}
