/**
 * The handler's OpenTelemetry instruments (README "Support and operations") through a fake
 * meter, over real HTTP with a memory log and a hand-driven agent: which instruments exist,
 * and that each counts what its name says, once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { createServerMetrics, type CounterLike, type HistogramLike, type MeterLike } from '../../../src/server/metrics.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { controlledAgent, type ControlledAgent } from '../../fixtures/agents.js';
import { newKey, startTestServer, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';

const TOKEN = 'Bearer metrics-operator';

/** Every value each instrument was given, by name; `kinds` says which instruments were created as what. */
function fakeMeter() {
  const values = new Map<string, { value: number; attributes?: Record<string, string> }[]>();
  const kinds = new Map<string, 'counter' | 'histogram'>();
  const instrument = (name: string, kind: 'counter' | 'histogram') => {
    if (kinds.has(name)) throw new Error(`${name} created twice`);
    kinds.set(name, kind);
    values.set(name, []);
    const take = (value: number, attributes?: Record<string, string>) => void values.get(name)!.push({ value, ...(attributes && { attributes }) });
    return { take };
  };
  const meter: MeterLike = {
    createCounter: (name): CounterLike => ({ add: instrument(name, 'counter').take }),
    createHistogram: (name): HistogramLike => ({ record: instrument(name, 'histogram').take }),
  };
  const sum = (name: string) => (values.get(name) ?? []).reduce((total, entry) => total + entry.value, 0);
  return { meter, values, kinds, sum };
}

describe('server metrics through a fake meter', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    let offset = 0;
    const now = () => Date.now() + offset;
    const log = createMemoryTurnLog({ now });
    const agent: ControlledAgent = controlledAgent();
    const fake = fakeMeter();
    const server: TestServer = await startTestServer({
      store: log,
      agent: agent.agent,
      now,
      meter: fake.meter,
      cancelPollMs: 20,
      stuckAfterMs: 5_000,
      undeliveredAfterMs: 5_000,
      authorizeOperator: (request) => {
        if (request.headers.get('authorization') !== TOKEN) throw new Error('refused');
        return 'ops';
      },
      audit: () => {},
    });
    cleanups.push(async () => {
      await server.close();
      await log.close();
    });
    const submit = async (text: string) => {
      const response = await fetch(`${server.baseUrl}/conversations/metrics/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
        body: JSON.stringify({ content: text }),
      });
      expect(response.status).toBe(202);
      const { turnId } = (await response.json()) as { turnId: string };
      return { turnId, control: await agent.nextTurn() };
    };
    const list = async (state: string) => {
      const response = await fetch(`${server.baseUrl}/operator/turns?state=${state}`, { headers: { authorization: TOKEN } });
      expect(response.status).toBe(200);
      return ((await response.json()) as { turns: { id: string }[] }).turns.map((turn) => turn.id);
    };
    return { server, fake, submit, list, advance: (ms: number) => (offset += ms) };
  }

  it('creates the counters and the histogram the README lists, and nothing without a meter', async () => {
    const { fake } = await setup();
    expect(Object.fromEntries(fake.kinds)).toEqual({
      'lifeline.turns.started': 'counter',
      'lifeline.turns.completed': 'counter',
      'lifeline.turns.failed': 'counter',
      'lifeline.turns.stuck': 'counter',
      'lifeline.turns.undelivered': 'counter',
      'lifeline.delivery.latency': 'histogram',
      'lifeline.streams.resumed': 'counter',
    });
    const none = createServerMetrics(undefined);
    expect(() => (none.started(), none.delivered(1), none.listed('stuck', ['a']), none.resumed())).not.toThrow();
  });

  it('counts turns started, completed, failed and cancelled', async () => {
    const s = await setup();
    const done = await s.submit('complete me');
    await done.control.delta('fine');
    await done.control.end();
    await waitForTurnEnd(s.server.log, done.turnId);
    const broken = await s.submit('fail me');
    await broken.control.throw();
    await waitForTurnEnd(s.server.log, broken.turnId);
    const stopped = await s.submit('cancel me');
    expect((await fetch(`${s.server.baseUrl}/turns/${stopped.turnId}/cancel`, { method: 'POST' })).status).toBe(202);
    await waitForTurnEnd(s.server.log, stopped.turnId);

    expect(s.fake.sum('lifeline.turns.started')).toBe(3);
    // The producer counts right after its turn.end is logged, which the log shows first.
    await expect.poll(() => s.fake.sum('lifeline.turns.failed')).toBe(2);
    expect(s.fake.values.get('lifeline.turns.completed')).toEqual([{ value: 1, attributes: { status: 'complete' } }]);
    expect(s.fake.values.get('lifeline.turns.failed')).toEqual([
      { value: 1, attributes: { status: 'failed' } },
      { value: 1, attributes: { status: 'cancelled' } },
    ]);
  });

  it('records delivery latency from turn.end to the first receipt, once', async () => {
    const s = await setup();
    const { turnId, control } = await s.submit('deliver me');
    await control.delta('the answer');
    await control.end();
    const ended = await waitForTurnEnd(s.server.log, turnId);
    s.advance(1_500);
    const body = JSON.stringify({ seq: ended.lastSeq, textSha256: await sha256Hex('the answer') });
    const send = () => fetch(`${s.server.baseUrl}/turns/${turnId}/delivered`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `r-${turnId}` }, body });
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(200);
    const recorded = s.fake.values.get('lifeline.delivery.latency')!;
    expect(recorded).toHaveLength(1);
    // The fake clock moved 1.5 s; the real one a few ms while the receipt travelled.
    expect(recorded[0]!.value).toBeGreaterThanOrEqual(1_500);
    expect(recorded[0]!.value).toBeLessThan(3_000);
  });

  it('counts a stuck or undelivered turn once however often it is listed', async () => {
    const s = await setup();
    const live = await s.submit('hang');
    await live.control.delta('waiting on a tool');
    const ended = await s.submit('nobody reads this');
    await ended.control.delta('unread');
    await ended.control.end();
    await waitForTurnEnd(s.server.log, ended.turnId);
    expect(await s.list('stuck')).toEqual([]);
    s.advance(6_000);
    for (let poll = 0; poll < 3; poll++) {
      expect(await s.list('stuck')).toEqual([live.turnId]);
      expect(await s.list('undelivered')).toEqual([ended.turnId]);
    }
    expect(s.fake.sum('lifeline.turns.stuck')).toBe(1);
    expect(s.fake.sum('lifeline.turns.undelivered')).toBe(1);
    await live.control.end();
  });

  it('counts follow requests that resume a live turn from a seq > 0, and no others', async () => {
    const s = await setup();
    const { turnId, control } = await s.submit('resume me');
    await control.delta('first');
    const follow = async (headers: Record<string, string>) => {
      const abort = new AbortController();
      const response = await fetch(`${s.server.baseUrl}/turns/${turnId}/events`, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
      abort.abort();
      return response.status;
    };
    expect(await follow({})).toBe(200);
    expect(s.fake.sum('lifeline.streams.resumed')).toBe(0);
    expect(await follow({ 'last-event-id': '1' })).toBe(200);
    expect(s.fake.sum('lifeline.streams.resumed')).toBe(1);
    await control.end();
    const ended = await waitForTurnEnd(s.server.log, turnId);
    // An ended turn read from a seq is a replay, not a lost stream.
    expect(await follow({ 'last-event-id': String(ended.lastSeq - 1) })).toBe(200);
    expect(s.fake.sum('lifeline.streams.resumed')).toBe(1);
  });
});
