/**
 * The client as an app sees it: external stores with stable snapshots and batched
 * notifications, the event iterator, diagnostics that survive throwing listeners,
 * integrity checking at turn.end, cancel, close/reopen, dispose and misuse.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { isCancelledError, isLifelineError } from '../../../src/errors.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import type { Diagnostic, TurnSnapshot } from '../../../src/types.js';
import { controlledAgent } from '../../fixtures/agents.js';
import { startTestServer, submitMessage } from '../../fixtures/server.js';
import { FAST_RETRY, follow, range } from './support/follow.js';
import { buildLog, sse, startScriptedServer, TURN } from './support/scripted-server.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function scripted(log: TurnEvent[], options: Parameters<typeof startScriptedServer>[0] extends infer O ? Partial<O> : never = {}) {
  const server = await startScriptedServer({ log, ...options });
  cleanup.push(() => server.close());
  return server;
}

describe('turn as an external store', () => {
  it('keeps the same snapshot object while nothing changes and notifies once per batch, not per event', async () => {
    const texts = Array.from({ length: 500 }, (_, i) => `w${i} `);
    const log = await buildLog(texts);
    const server = await scripted(log);
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const seen = new Set<TurnSnapshot>();
    let notifications = 0;
    followed.turn.subscribe(() => {
      notifications += 1;
      const snapshot = followed.turn.getSnapshot();
      expect(followed.turn.getSnapshot()).toBe(snapshot);
      seen.add(snapshot);
    });
    const final = await followed.turn.completed;
    expect(final.text).toBe(texts.join(''));
    expect(followed.turn.getSnapshot()).toBe(followed.turn.getSnapshot());
    // The whole log arrives in one chunk: a handful of notifications for 502 events.
    expect(notifications).toBeGreaterThan(0);
    expect(notifications).toBeLessThan(20);
    expect(seen.size).toBe(notifications);
    expect(Object.isFrozen(final)).toBe(true);
  });

  it('iterates the applied events in seq order and ends with the turn; breaking out stops delivery', async () => {
    const log = await buildLog(['a', 'b', 'c']);
    const server = await scripted(log);
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const firstTwo: number[] = [];
    for await (const event of followed.turn) {
      firstTwo.push(event.seq);
      if (firstTwo.length === 2) break;
    }
    await followed.iterated;
    expect(firstTwo).toEqual([1, 2]);
    expect(followed.applied).toEqual(range(log.length));
    const after: TurnEvent[] = [];
    for await (const event of followed.turn) after.push(event);
    expect(after).toEqual([]);
  });

  it('counts handles per turn id: the turn stops when the last one closes, and turn(id) follows it again', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_close', 'go');
    const control = await agent.nextTurn();
    const followed = follow(server.baseUrl, answer.turnId);
    cleanup.push(() => followed.client.dispose());
    // A second consumer (another component): its own handle over the same turn.
    const other = followed.client.turn(answer.turnId);
    expect(other).not.toBe(followed.turn);
    expect(other.getSnapshot()).toBe(followed.turn.getSnapshot());
    await control.delta('a');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('a');
    // One of two consumers closes: the other still sees the turn move.
    other.close();
    await control.delta('b');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('ab');
    followed.turn.close();
    await expect.poll(() => followed.turn.getSnapshot().connection.state).toBe('idle');
    await control.delta('c');
    await control.end();
    expect(followed.turn.getSnapshot().text).toBe('ab');
    const again = followed.client.turn(answer.turnId);
    const final = await again.completed;
    expect(final.text).toBe('abc');
    expect(followed.ofType('connect').map((d) => d.lastEventId)).toEqual([0, 3]);
  });

  it('lists every followed turn in the turns store with a stable array while unchanged', async () => {
    const log = await buildLog(['x']);
    const server = await scripted(log);
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    await followed.turn.completed;
    await expect.poll(() => followed.client.turns.getSnapshot()[0]?.status).toBe('complete');
    const list = followed.client.turns.getSnapshot();
    expect(followed.client.turns.getSnapshot()).toBe(list);
    expect(list.map((turn) => turn.id)).toEqual([TURN]);
    const conversation = followed.client.conversation('conv_1');
    expect(conversation.getSnapshot().items).toEqual([{ role: 'assistant', key: TURN, turn: list[0] }]);
    expect(conversation.getSnapshot()).toBe(conversation.getSnapshot());
  });
});

describe('diagnostics', () => {
  it('keeps working when every kind of listener throws', async () => {
    const report = vi.spyOn(console, 'error').mockImplementation(() => {});
    const log = await buildLog(['still ', 'fine']);
    const server = await scripted(log);
    const client = createLifeline({
      baseUrl: server.baseUrl,
      storage: 'memory',
      retry: FAST_RETRY,
      onDiagnostic: () => {
        throw new Error('app bug in onDiagnostic');
      },
    });
    cleanup.push(() => client.dispose());
    const seen: Diagnostic['type'][] = [];
    client.diagnostics.subscribe(() => {
      throw new Error('app bug in a diagnostics subscriber');
    });
    client.diagnostics.subscribe((diagnostic) => seen.push(diagnostic.type));
    const turn = client.turn(TURN);
    turn.subscribe(() => {
      throw new Error('app bug in a turn subscriber');
    });
    const final = await turn.completed;
    expect(final.text).toBe('still fine');
    expect(seen).toEqual(expect.arrayContaining(['connect', 'open', 'completed']));
    expect(report).toHaveBeenCalled();
  });
});

describe('integrity at turn.end', () => {
  /**
   * A server whose first stream sends "Hello 世界" with the delta "lo " changed to
   * `replacement` (by default "LO ", the same length: only the hash can tell). Later
   * streams and replays are the true log.
   */
  async function corruptedFirstStream(replacement = 'LO ') {
    const log = await buildLog(['Hel', 'lo ', '世界']);
    const corrupted = log.map((event) => (event.type === 'delta' && event.text === 'lo ' ? { ...event, text: replacement } : event));
    return scripted(log, {
      stream: ({ index, res }) => {
        if (index > 0) return 'default';
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(corrupted.map(sse).join(''));
      },
    });
  }

  it('rebuilds from a full replay when the text does not match textSha256', async () => {
    const server = await corruptedFirstStream();
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('complete');
    expect(final.text).toBe('Hello 世界');
    expect(followed.ofType('integrity-mismatch')).toEqual([expect.objectContaining({ expectedLength: 8, actualLength: 8 })]);
    expect(server.replays.map((request) => request.cursor)).toEqual(['0']);
    expect(followed.ofType('completed')).toHaveLength(1);
    await expect.poll(async () => (await followed.store.loadTurn(TURN))?.record.text).toBe('Hello 世界');
  });

  it('checks textLength only where Web Crypto is missing (insecure contexts), and says so once', async () => {
    // The log is built (and hashed) first; only the client then finds Web Crypto missing.
    const server = await corruptedFirstStream();
    const digest = vi.spyOn(crypto.subtle, 'digest').mockRejectedValue(new DOMException('not in a secure context', 'NotSupportedError'));
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    // Same length: without the hash the corruption cannot be seen, and the client says the hash went unchecked.
    expect(final).toEqual(expect.objectContaining({ status: 'complete', text: 'HelLO 世界' }));
    expect(followed.ofType('integrity-unchecked')).toEqual([expect.objectContaining({ turnId: TURN })]);
    expect(followed.ofType('integrity-mismatch')).toEqual([]);
    expect(digest).toHaveBeenCalled();
  });

  it('still rebuilds on a textLength mismatch where Web Crypto is missing', async () => {
    const server = await corruptedFirstStream('lo');
    vi.spyOn(crypto.subtle, 'digest').mockRejectedValue(new DOMException('not in a secure context', 'NotSupportedError'));
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final).toEqual(expect.objectContaining({ status: 'complete', text: 'Hello 世界' }));
    expect(followed.ofType('integrity-mismatch')).toEqual([expect.objectContaining({ expectedLength: 8, actualLength: 7 })]);
    expect(server.replays.map((request) => request.cursor)).toEqual(['0']);
    // The rebuilt text matched by length; its hash could not be checked, which is said once.
    expect(followed.ofType('integrity-unchecked')).toHaveLength(1);
    expect(followed.ofType('completed')).toHaveLength(1);
  });

  it('fails with integrity_mismatch when the full replay does not match either', async () => {
    const log = await buildLog(['Hel', 'lo']);
    const wrong = log.map((event) => (event.type === 'turn.end' ? { ...event, textSha256: 'f'.repeat(64) } : event));
    const server = await scripted(wrong);
    const followed = follow(server.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('integrity_mismatch');
    expect(final.text).toBe('Hello');
    expect(followed.ofType('integrity-mismatch')).toHaveLength(2);
  });
});

describe('cancel, dispose and misuse', () => {
  it('cancels through the server and ends cancelled', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_cancel', 'go');
    const control = await agent.nextTurn();
    const followed = follow(server.baseUrl, answer.turnId);
    cleanup.push(() => followed.client.dispose());
    await control.delta('partial');
    await expect.poll(() => followed.turn.getSnapshot().text).toBe('partial');
    await followed.turn.cancel();
    const final = await followed.turn.completed;
    expect(final.status).toBe('cancelled');
    expect(final.text).toBe('partial');
  });

  it('ends its connections on dispose and refuses use afterwards', async () => {
    const agent = controlledAgent();
    const server = await startTestServer({ agent: agent.agent });
    cleanup.push(() => server.close());
    const answer = await submitMessage(server.baseUrl, 'conv_dispose', 'go');
    await agent.nextTurn();
    const followed = follow(server.baseUrl, answer.turnId);
    await expect.poll(() => server.sockets.size).toBe(1);
    followed.client.dispose();
    await expect.poll(() => server.sockets.size).toBe(0);
    expect(followed.turn.getSnapshot().connection.state).toBe('idle');
    try {
      followed.client.turn(answer.turnId);
      expect.unreachable();
    } catch (error) {
      expect(isCancelledError(error) && error.code).toBe('disposed');
    }
  });

  it('rejects unusable options and ids with invalid_argument', () => {
    const bad: unknown[] = [
      () => createLifeline({ baseUrl: 42 } as never),
      () => createLifeline({ baseUrl: '/api', retry: { factor: 0 } }),
      () => createLifeline({ baseUrl: '/api', stall: { idleMs: -1 } }),
      () => createLifeline({ baseUrl: '/api', storage: 'memory' }).turn('no spaces allowed'),
    ];
    for (const attempt of bad) {
      try {
        (attempt as () => unknown)();
        expect.unreachable();
      } catch (error) {
        expect(isLifelineError(error) && error.code).toBe('invalid_argument');
      }
    }
  });
});
