/**
 * The shared-store suite: two reference server instances on their own ports sharing
 * one real Redis (or Redis Cluster), as behind
 * a load balancer without sticky sessions: a client cut from A resumes and replays on
 * B (T=, J0), both with a raw SSE reader and with the real Lifeline client behind a
 * balancer that moves it; duplicate submissions racing on A and B make one turn (X1);
 * and a cancel through B stops A's producer. A rolling deploy and an instance killed
 * mid-turn: redis-instance-faults.ts.
 */
import '../client/support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { EventChunk, Store } from '../../../src/storage/store.js';
import type { Diagnostic } from '../../../src/types.js';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { submitAnswerSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import { createRedisTurnLog, type RedisTurnLogOptions } from '../../../src/server/log/redis/index.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { controlledAgent, splitText, textAgent } from '../../fixtures/agents.js';
import { newKey, replayAll, startTestServer, submitMessage, textOf, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';
import { createFollower, expectIntact, oneToN, seqs, untilSnapshot } from './seq-follower.js';
import { defineInstanceFaults } from './redis-instance-faults.js';
import { cleanups, newPrefix, runCleanups } from './shared-store-kit.js';


/**
 * Defines the suite over the store at `url()` (a `redis://` or `redis-cluster://` URL,
 * read once the caller's `beforeAll` has started it). `name` names it in test titles.
 */
export function defineSharedStoreSuite(name: string, url: () => string): void {
  afterEach(runCleanups);

  /** One instance: its own handler, HTTP port and Redis connections; the key prefix names the shared store. */
  async function instance(keyPrefix: string, agent: Agent, options: Partial<RedisTurnLogOptions> = {}): Promise<TestServer & { errors: unknown[] }> {
    const errors: unknown[] = [];
    const store = createRedisTurnLog({ url: url(), keyPrefix, onError: (error) => errors.push(error), ...options });
    cleanups.push(() => store.close());
    const server = await startTestServer({ store, agent, onError: (error) => errors.push(error) });
    cleanups.push(() => server.close());
    // The handler's and the store's reports in one list.
    return { ...server, errors };
  }

  describe(`two instances sharing one ${name}`, () => {
    it('resumes on B a stream cut on A, and replays it on B: T= and J0', async () => {
      const keyPrefix = newPrefix();
      const agent = controlledAgent();
      const a = await instance(keyPrefix, agent.agent);
      const b = await instance(keyPrefix, textAgent('B never produces this turn'));
      const parts = splitText('Streams survive a cut: 日本語, emoji 😀👍🏽, and "quotes"\n across two instances. ', 3);

      const answer = await submitMessage(a.baseUrl, 'conv-cut', 'Hello from A');
      const control = await agent.nextTurn();
      const follower = createFollower(answer.turnId);
      const onA = follower.follow(a.baseUrl);
      const third = Math.floor(parts.length / 3);
      for (const part of parts.slice(0, third)) await control.delta(part);
      await follower.until((events) => events.length >= 4);
      expect(a.sockets.destroyAll()).toBe(1);
      expect(await onA).toBe('cut');

      // Produced on A while no client is connected anywhere.
      for (const part of parts.slice(third, 2 * third)) await control.delta(part);
      const onB = follower.follow(b.baseUrl);
      for (const part of parts.slice(2 * third)) await control.delta(part);
      await control.end();
      expect(await onB).toBe('ended');

      const replayed = await replayAll(b.baseUrl, answer.turnId);
      expect(replayed.turn).toMatchObject({ status: 'complete', lastSeq: parts.length + 2 });
      await expectIntact(follower.applied, replayed.events);
      expect(textOf(follower.applied)).toBe(parts.join(''));
      // J0: nothing lost, duplicated or out of order, even on the wire.
      expect(follower.duplicates).toBe(0);
      expect(follower.gaps).toBe(0);
      // B also lists the turn A created.
      const listed = (await (await fetch(`${b.baseUrl}/conversations/conv-cut/turns`)).json()) as { turns: { id: string }[] };
      expect(listed.turns.map((turn) => turn.id)).toEqual([answer.turnId]);
    });

    it('moves the real Lifeline client from A to B through a balancer mid-turn: resumed on B, T= and J0 in its storage', async () => {
      const keyPrefix = newPrefix();
      const agent = controlledAgent();
      const a = await instance(keyPrefix, agent.agent);
      const b = await instance(keyPrefix, textAgent('B never produces this turn'));
      const parts = splitText('The balancer moved me mid-turn: ünïcødé, 漢字, 🚀 and all. '.repeat(2), 4);

      // The balancer: the client only knows one origin; each request goes where `target` says.
      let target = a.origin;
      const routed: { origin: string; path: string; lastEventId: string | null }[] = [];
      const balancer: typeof fetch = (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
        routed.push({ origin: target, path: url.pathname, lastEventId: headers.get('last-event-id') });
        return fetch(`${target}${url.pathname}${url.search}`, init);
      };
      // Every chunk the client makes durable, in order: J0 is checked on what it stored.
      const memory = createMemoryStore();
      const stored: EventChunk[] = [];
      const store = new Proxy(memory, {
        get(target_, property, receiver) {
          if (property === 'write') {
            return (items: Parameters<Store['write']>[0]) => {
              for (const { chunk } of items) if (chunk) stored.push(structuredClone(chunk));
              return memory.write(items);
            };
          }
          return Reflect.get(target_, property, receiver) as unknown;
        },
      });
      const diagnostics: Diagnostic[] = [];
      const client = createLifeline({
        baseUrl: 'http://balancer.invalid/api',
        fetch: balancer,
        storage: store,
        retry: { initialDelayMs: 20, maxDelayMs: 200, firstRetryJitterMs: 0 },
        onDiagnostic: (diagnostic) => diagnostics.push(diagnostic),
      });
      cleanups.push(async () => client.dispose());

      // Submitted on A (through the balancer's current target), then followed by the client.
      const answer = await submitMessage(a.baseUrl, 'conv-lb', 'Hello through the balancer');
      const turn = client.turn(answer.turnId);
      const control = await agent.nextTurn();
      const half = Math.floor(parts.length / 2);
      for (const part of parts.slice(0, half)) await control.delta(part);
      await untilSnapshot(turn, (snapshot) => snapshot.lastSeq >= 4);

      target = b.origin;
      expect(a.sockets.destroyAll()).toBe(1);
      for (const part of parts.slice(half)) await control.delta(part);
      await control.end();
      const final = await turn.completed;

      const replayed = await replayAll(b.baseUrl, turn.id);
      expect(final.status).toBe('complete');
      expect(final.lastSeq).toBe(replayed.events.length);
      expect(final.text).toBe(textOf(replayed.events));
      expect(final.text).toBe(parts.join(''));
      const end = replayed.events.at(-1) as TurnEvent & { type: 'turn.end' };
      expect(end.textSha256).toBe(await sha256Hex(final.text));
      // J0 on the client's storage: every seq once, in order, none missing.
      expect(stored.flatMap((chunk) => seqs(chunk.events))).toEqual(oneToN(replayed.events.length));
      expect(stored.flatMap((chunk) => chunk.events)).toEqual(replayed.events);
      expect(diagnostics.filter((d) => d.type === 'duplicate' || d.type === 'gap' || d.type === 'integrity-mismatch')).toEqual([]);
      // It saw the cut, and resumed on B with its own cursor; it did not start over.
      expect(diagnostics.filter((d) => d.type === 'disconnect')).toHaveLength(1);
      const resumedOnB = routed.filter((request) => request.origin === b.origin && request.path.endsWith('/events'));
      expect(resumedOnB.length).toBeGreaterThan(0);
      expect(Number(resumedOnB[0]?.lastEventId)).toBeGreaterThanOrEqual(1);
    });

    it('makes exactly one turn from duplicate submissions racing on A and B (X1)', async () => {
      const keyPrefix = newPrefix();
      const a = await instance(keyPrefix, textAgent('One turn per key.'));
      const b = await instance(keyPrefix, textAgent('One turn per key.'));
      const submit = (server: TestServer, key: string, content = 'same body'): Promise<Response> =>
        fetch(`${server.baseUrl}/conversations/conv-dup/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ content }),
        });
      const rounds = 12;
      const keys = Array.from({ length: rounds }, () => newKey());
      const statuses: number[] = [];
      const turnIds = new Set<string>();
      for (const key of keys) {
        const responses = await Promise.all([submit(a, key), submit(b, key)]);
        const created = responses.filter((response) => response.status === 202);
        expect(created).toHaveLength(1);
        const other = responses.find((response) => response.status !== 202) as Response;
        expect([200, 409]).toContain(other.status);
        statuses.push(other.status);
        const turnId = submitAnswerSchema.parse(await (created[0] as Response).json()).turnId;
        if (other.status === 200) {
          expect(other.headers.get('idempotent-replayed')).toBe('true');
          expect(submitAnswerSchema.parse(await other.json()).turnId).toBe(turnId);
        } else {
          await other.body?.cancel();
        }
        turnIds.add(turnId);
        // Once the first answer is recorded, both instances replay it; another body is refused.
        await waitForTurnEnd(a.log, turnId);
        for (const server of [a, b]) {
          const again = await submit(server, key);
          expect(again.status).toBe(200);
          expect(submitAnswerSchema.parse(await again.json()).turnId).toBe(turnId);
          expect((await submit(server, key, 'another body')).status).toBe(422);
        }
      }
      expect(turnIds.size).toBe(rounds);
      const listed = (await (await fetch(`${a.baseUrl}/conversations/conv-dup/turns?limit=200`)).json()) as { turns: { id: string }[] };
      expect(new Set(listed.turns.map((turn) => turn.id))).toEqual(turnIds);
      expect(listed.turns).toHaveLength(rounds);
    });

    it('stops the producer on A when the turn is cancelled through B', async () => {
      const keyPrefix = newPrefix();
      const agent = controlledAgent();
      const a = await instance(keyPrefix, agent.agent);
      const b = await instance(keyPrefix, textAgent('unused'));
      const answer = await submitMessage(a.baseUrl, 'conv-cancel', 'Cancel me from elsewhere');
      const control = await agent.nextTurn();
      await control.delta('partial');
      const follower = createFollower(answer.turnId);
      const onB = follower.follow(b.baseUrl);
      const cancelled = await fetch(`${b.baseUrl}/turns/${answer.turnId}/cancel`, { method: 'POST' });
      expect(cancelled.status).toBe(202);
      expect(await onB).toBe('ended');
      expect(follower.applied.at(-1)).toMatchObject({ type: 'turn.end', status: 'cancelled', textLength: 'partial'.length });
      expect(control.context.signal.aborted).toBe(true);
      await expectIntact(follower.applied, (await replayAll(a.baseUrl, answer.turnId)).events);
    });
  });
  defineInstanceFaults(name, url, instance);
}
