/**
 * Part of the shared-store suite (redis-shared-store-suite.ts), on the same store: a
 * rolling deploy (each instance drained and restarted in turn) loses no turn, and an
 * instance killed with SIGKILL mid-turn leaves its turn ended `failed`/`producer_lost`,
 * visibly, on the survivor.
 */
import '../client/support/dom-shim.js';
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLifeline } from '../../../src/client.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import type { Diagnostic } from '../../../src/types.js';
import { createRedisTurnLog, type RedisTurnLogOptions } from '../../../src/server/log/redis/index.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { serve } from '../../../src/server/node/index.js';
import type { Agent } from '../../../src/server/producer/agent.js';
import { textAgent } from '../../fixtures/agents.js';
import { replayAll, submitMessage, type TestServer } from '../../fixtures/server.js';
import { createFollower, expectIntact, untilSnapshot } from './seq-follower.js';
import { cleanups, newPrefix } from './shared-store-kit.js';

/** One instance on the shared store, as redis-shared-store-suite.ts starts it (its own port and connections). */
export type StartInstance = (keyPrefix: string, agent: Agent, options?: Partial<RedisTurnLogOptions>) => Promise<TestServer & { errors: unknown[] }>;

export function defineInstanceFaults(name: string, url: () => string, instance: StartInstance): void {
  describe(`a rolling deploy on ${name} (docs/faults.md #50)`, () => {
    /** An instance that can be stopped the way a deploy stops it: drain, then close. */
    async function deployable(keyPrefix: string, agent: Agent) {
      const errors: unknown[] = [];
      const store = createRedisTurnLog({ url: url(), keyPrefix, onError: (error) => errors.push(error) });
      const handler = createLifelineHandler({ store, agent, basePath: '/api', onError: (error) => errors.push(error) });
      const served = await serve(handler);
      let stopped = false;
      const stop = async (): Promise<void> => {
        if (stopped) return;
        stopped = true;
        await served.close({ drainMs: 20_000 });
        await store.close();
      };
      cleanups.push(stop);
      return { origin: served.url, errors, stop };
    }

    it('loses no turn: A restarted, then B, with live turns on both; every turn complete, every client text exact', async () => {
      const keyPrefix = newPrefix();
      const text = 'Rolled out under a live answer: ünïcødé, 漢字, 🚀. '.repeat(3);
      const agent = textAgent(text, { chunk: 3, delayMs: 8 });
      const a = await deployable(keyPrefix, agent);
      const b = await deployable(keyPrefix, agent);
      // The balancer: round robin over the instances up now; a stopped one refuses connections until replaced.
      const targets = [a.origin, b.origin];
      let next = 0;
      const statuses: number[] = [];
      const balancer: typeof fetch = async (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const target = targets[next++ % targets.length] as string;
        const response = await fetch(`${target}${url.pathname}${url.search}`, init);
        statuses.push(response.status);
        return response;
      };
      const diagnostics: Diagnostic[] = [];
      const client = createLifeline({
        baseUrl: 'http://balancer.invalid/api',
        fetch: balancer,
        storage: createMemoryStore(),
        retry: { initialDelayMs: 20, maxDelayMs: 200, firstRetryJitterMs: 0 },
        onDiagnostic: (diagnostic) => diagnostics.push(diagnostic),
      });
      cleanups.push(async () => client.dispose());

      const turns: Promise<import('../../../src/types.js').Turn>[] = [];
      /** Sends `count` messages and resolves once each of their turns streams. */
      async function sendLive(count: number): Promise<void> {
        const accepted = Array.from({ length: count }, (_, i) => client.conversation(`conv-roll-${turns.length + i}`).send('roll').accepted);
        turns.push(...accepted);
        for (const turn of await Promise.all(accepted)) await untilSnapshot(turn, (snapshot) => snapshot.text.length > 0);
      }
      async function restart(index: number, instance: { stop(): Promise<void> }): Promise<void> {
        await instance.stop();
        targets[index] = (await deployable(keyPrefix, agent)).origin;
      }

      // Each restart begins with turns streaming on both instances, and messages are sent
      // while it drains: the draining instance answers them 503 and the outbox sends them again.
      await sendLive(4);
      await Promise.all([restart(0, a), sendLive(2)]);
      await sendLive(2);
      await Promise.all([restart(1, b), sendLive(2)]);
      const finals = await Promise.all((await Promise.all(turns)).map((turn) => turn.completed));
      expect(finals.map((final) => final.status)).toEqual(finals.map(() => 'complete'));
      for (const final of finals) expect(final.text).toBe(text);
      expect(diagnostics.filter((d) => d.type === 'duplicate' || d.type === 'gap' || d.type === 'integrity-mismatch')).toEqual([]);
      // The deploy was felt: submissions refused while draining, followers moved when an instance closed.
      expect(statuses).toContain(503);
      expect(diagnostics.filter((d) => d.type === 'disconnect').length).toBeGreaterThan(0);
      // Nothing was cut short on the server: no turn ended server_shutdown or producer_lost.
      expect([...a.errors, ...b.errors].map(String).filter((error) => /producer_lost|server_shutdown/.test(error))).toEqual([]);
      const cuts = diagnostics.filter((d) => d.type === 'disconnect').length;
      console.log(`[${name}] rolling deploy: ${finals.length}/${finals.length} turns complete, text exact; ${statuses.filter((status) => status === 503).length} submissions answered 503 while draining; ${cuts} streams moved`);
    });
  });

  describe(`an instance killed mid-turn (${name})`, () => {
    const children: ChildProcess[] = [];
    afterEach(() => {
      for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    /** Starts an instance in its own process (see redis-child-instance.ts); resolves with its API base. */
    async function childInstance(keyPrefix: string): Promise<{ baseUrl: string; child: ChildProcess }> {
      const script = fileURLToPath(new URL('./redis-child-instance.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', script], {
        env: { ...process.env, REDIS_URL: url(), KEY_PREFIX: keyPrefix },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
      const port = await new Promise<number>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`the child instance exited (${code}) before listening`)));
        lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
      });
      return { baseUrl: `http://127.0.0.1:${port}/api`, child };
    }

    it('ends its turn failed/producer_lost on the surviving instance within three heartbeats (default lease and heartbeat)', async () => {
      const keyPrefix = newPrefix();
      const a = await childInstance(keyPrefix);
      const b = await instance(keyPrefix, textAgent('unused'));

      const answer = await submitMessage(a.baseUrl, 'conv-kill', 'Stream until I die');
      const follower = createFollower(answer.turnId);
      const onB = follower.follow(b.baseUrl);
      await follower.until((events) => events.length >= 5);
      // The lease outlives many renewal periods while A is alive.
      await follower.until((events) => events.length >= 40);
      expect(follower.ended()).toBe(false);

      const exited = new Promise((resolve) => a.child.once('exit', resolve));
      const killedAt = performance.now();
      a.child.kill('SIGKILL');
      await exited;

      // B's follower waits on the log; the lapsed lease ends the turn within about 2.5 heartbeats.
      expect(await onB).toBe('ended');
      console.log(`[${name}] producer SIGKILL → turn.end on the other instance: ${Math.round(performance.now() - killedAt)} ms`);
      // docs/faults.md #49: no heartbeats without progress past the bound: the stale lease
      // (2 s after the last renewal) ends the turn at B's next look, under three 1 s heartbeats.
      expect(follower.heartbeatsBeforeEnd).toBeLessThanOrEqual(2);
      const end = follower.applied.at(-1);
      expect(end).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'producer_lost' } });
      const replayed = await replayAll(b.baseUrl, answer.turnId);
      expect(replayed.turn.status).toBe('failed');
      await expectIntact(follower.applied, replayed.events);
      expect(follower.duplicates).toBe(0);
      expect(follower.gaps).toBe(0);
      // Exactly one turn.end, and the instance that wrote it reported it.
      expect(replayed.events.filter((event) => event.type === 'turn.end')).toHaveLength(1);
      expect(b.errors.filter((error) => String(error).includes('producer_lost'))).toHaveLength(1);
    });
  });
}
