/**
 * `client.drill`: faults set off on purpose (what `lifeline-chat/devtools` buttons call), against the
 * reference server over real sockets. A drill must do what a real fault does (docs/faults.md rows 1
 * and 2: reconnect with the last applied seq, the stall watchdog notices a deaf stream), end with
 * the oracles T= and J0, and say when it does not fit the turn's state.
 */
import './support/dom-shim.js';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isLifelineError } from '../../../src/errors.js';
import { controlledAgent, type TurnControl } from '../../fixtures/agents.js';
import { isStreamRequest, startFaultProxy, type FaultProxy } from '../../fixtures/fault-proxy.js';
import { startTestServer, submitMessage, type TestServer } from '../../fixtures/server.js';
import { expectSameAsServer, follow, type Followed } from './support/follow.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

interface Rig {
  server: TestServer;
  proxy: FaultProxy;
  turnId: string;
  control: TurnControl;
  followed: Followed;
}

/** A hand-driven turn followed through a pass-through proxy that records every request. */
async function rig(options: Parameters<typeof follow>[2] = {}): Promise<Rig> {
  const agent = controlledAgent();
  const server = await startTestServer({ agent: agent.agent });
  const proxy = await startFaultProxy({ targetPort: (server.server.address() as AddressInfo).port });
  cleanup.push(() => server.close(), () => proxy.close());
  const { turnId } = await submitMessage(server.baseUrl, 'conv_drill', 'go');
  const control = await agent.nextTurn();
  const followed = follow(`${proxy.origin}/api`, turnId, options);
  cleanup.push(() => followed.client.dispose());
  return { server, proxy, turnId, control, followed };
}

/** Resolves once the client has applied `seq`. */
const applied = (followed: Followed, seq: number) => expect.poll(() => followed.turn.getSnapshot().lastSeq).toBeGreaterThanOrEqual(seq);

const expectIdentical = ({ server, followed, turnId }: Rig): Promise<string> => expectSameAsServer(server.baseUrl, followed, turnId);

describe('client.drill', () => {
  it('cut: drops the open stream and reconnects from the last applied seq (T=, J0)', async () => {
    const r = await rig();
    await r.control.delta('Hello');
    await applied(r.followed, 2);

    expect(r.followed.client.drill(r.turnId, 'cut')).toBe(true);
    const [disconnect] = r.followed.ofType('disconnect');
    expect(disconnect?.cause.message).toBe('Cut by client.drill.');
    expect(r.followed.ofType('drill')).toEqual([expect.objectContaining({ turnId: r.turnId, drill: 'cut', applied: true })]);
    // Said before what it causes, so a timeline reads in order.
    const types = r.followed.diagnostics.map((d) => d.type);
    expect(types.indexOf('drill')).toBeLessThan(types.indexOf('disconnect'));
    await expect.poll(() => r.proxy.requests.filter(isStreamRequest).length).toBe(2);
    expect(r.proxy.requests.filter(isStreamRequest)[1]?.headers['last-event-id']).toBe('2');

    await r.control.delta(', world');
    await r.control.end();
    await expectIdentical(r);
  });

  it('stall: the stream goes deaf, the stall watchdog notices it and the log brings what was missed', async () => {
    const r = await rig({ stall: { firstEventMs: 400, idleMs: 400 } });
    await r.control.delta('Hello');
    await applied(r.followed, 2);
    let appliedAtStall = -1;
    r.followed.client.diagnostics.subscribe((d) => {
      if (d.type === 'stalled') appliedAtStall = r.followed.turn.getSnapshot().lastSeq;
    });

    expect(r.followed.client.drill(r.turnId, 'stall')).toBe(true);
    // Produced while deaf: on the wire, not applied, until the watchdog fires.
    await r.control.delta(', world');
    await expect.poll(() => r.followed.ofType('stalled').length).toBe(1);
    expect(appliedAtStall).toBe(2);
    expect(r.followed.ofType('stalled')[0]).toEqual(expect.objectContaining({ watchdog: 'idle' }));
    expect(r.followed.ofType('stalled')[0]!.silentMs).toBeGreaterThanOrEqual(400);
    await expect.poll(() => r.followed.ofType('recovered').some((d) => d.path === 'replay')).toBe(true);

    await r.control.end();
    await expectIdentical(r);
  });

  it('replay on a live turn: reads the log after its last seq, then streams on', async () => {
    const r = await rig();
    await r.control.delta('Hello');
    await applied(r.followed, 2);

    expect(r.followed.client.drill(r.turnId, 'replay')).toBe(true);
    await expect.poll(() => r.proxy.requests.filter((q) => q.path.startsWith(`/api/turns/${r.turnId}?`)).map((q) => new URL(q.path, 'http://x').searchParams.get('after'))).toEqual(['2']);
    await expect.poll(() => r.proxy.requests.filter(isStreamRequest).length).toBe(2);

    await r.control.delta(', world');
    await r.control.end();
    await expectIdentical(r);
  });

  it('replay on an ended turn: its copy is rebuilt from seq 0 and checked again', async () => {
    const r = await rig();
    await r.control.delta('Hello, world');
    await r.control.end();
    const first = await r.followed.turn.completed;
    expect(first.status).toBe('complete');

    expect(r.followed.client.drill(r.turnId, 'replay')).toBe(true);
    await expect.poll(() => r.proxy.requests.some((q) => q.path.startsWith(`/api/turns/${r.turnId}?after=0`))).toBe(true);
    const rebuilt = await r.followed.turn.completed;
    expect(rebuilt).not.toBe(first);
    expect(rebuilt.status).toBe('complete');
    expect(rebuilt.text).toBe('Hello, world');
    expect(r.followed.ofType('completed')).toHaveLength(2);
  });

  it('says so when a drill does not fit: nothing is done', async () => {
    const r = await rig();
    const { client } = r.followed;
    expect(client.drill('never_followed', 'cut')).toBe(false);
    await r.control.delta('Hi');
    await r.control.end();
    await r.followed.turn.completed;
    const streams = r.proxy.requests.filter(isStreamRequest).length;
    // An ended turn has no stream to cut or stall.
    expect(client.drill(r.turnId, 'cut')).toBe(false);
    expect(client.drill(r.turnId, 'stall')).toBe(false);
    expect(r.followed.ofType('drill').map((d) => [d.turnId, d.drill, d.applied])).toEqual([
      ['never_followed', 'cut', false],
      [r.turnId, 'cut', false],
      [r.turnId, 'stall', false],
    ]);
    expect(r.followed.ofType('disconnect')).toHaveLength(0);
    expect(r.proxy.requests.filter(isStreamRequest)).toHaveLength(streams);
  });

  it('throws invalid_argument for an unknown drill or id, disposed after dispose', async () => {
    const r = await rig();
    const { client } = r.followed;
    const codeOf = (call: () => unknown): string | undefined => {
      try {
        call();
      } catch (error) {
        return isLifelineError(error) ? error.code : 'not a LifelineError';
      }
      return undefined;
    };
    expect(codeOf(() => client.drill(r.turnId, 'explode' as 'cut'))).toBe('invalid_argument');
    expect(codeOf(() => client.drill('no spaces allowed', 'cut'))).toBe('invalid_argument');
    client.dispose();
    expect(codeOf(() => client.drill(r.turnId, 'cut'))).toBe('disposed');
  });
});
