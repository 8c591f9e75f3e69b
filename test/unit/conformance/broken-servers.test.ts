/**
 * The suite catches broken servers: each deliberately broken variant of the reference
 * handler must make the check of the rule it breaks FAIL (with the rest of its section
 * run alongside, as a user running `--only` would).
 */
import { describe, expect, it } from 'vitest';
import { runConformance, type CheckResult } from '../../../src/conformance/index.js';
import { breakages, type Breakage } from './breakages.js';
import { FAST, startConformanceServer } from './reference-server.js';

async function resultsAgainst(breakage: Breakage, only: string[]): Promise<CheckResult[]> {
  const server = await startConformanceServer({ breakage });
  try {
    return (await runConformance({ baseUrl: server.baseUrl, ...FAST, only })).results;
  } finally {
    await server.close();
  }
}

function statusOf(results: readonly CheckResult[], id: string): CheckResult {
  const result = results.find((candidate) => candidate.id === id);
  if (!result) throw new Error(`check ${id} did not run`);
  return result;
}

const CASES: readonly { name: keyof typeof breakages; only: string[]; fails: string; because: RegExp }[] = [
  { name: 'skippedSeq', only: ['s2.seq-contiguous', 's2.resume-after'], fails: 's2.seq-contiguous', because: /event 3 has seq 4/ },
  { name: 'missing204', only: ['s2.end-204'], fails: 's2.end-204', because: /answered 200, expected 204/ },
  { name: 'replayDiffers', only: ['s3.replay-equals-stream'], fails: 's3.replay-equals-stream', because: /the replayed events: .*item 1/ },
  { name: 'idempotencyCreatesSecondTurn', only: ['s1'], fails: 's1.idempotent-replay', because: /answered 202, expected 200/ },
  { name: 'heartbeatWithId', only: ['s2.heartbeats'], fails: 's2.heartbeats', because: /a heartbeat carries an id line/ },
  { name: 'untypedErrors', only: ['s0'], fails: 's0.error-bodies', because: /not application\/json/ },
  { name: 'noHeartbeatHeader', only: ['s2.heartbeat-header'], fails: 's2.heartbeat-header', because: /no Lifeline-Heartbeat header/ },
  { name: 'dropsContext', only: ['s1.context'], fails: 's1.context', because: /the context the agent was handed/ },
  { name: 'dropsContinues', only: ['s9'], fails: 's9.continues', because: /has continues undefined/ },
];

describe('conformance suite against broken servers', () => {
  for (const { name, only, fails, because } of CASES) {
    it(`${name}: ${fails} fails`, async () => {
      const result = statusOf(await resultsAgainst(breakages[name], only), fails);
      expect(result.status).toBe('fail');
      expect(result.reason).toMatch(because);
    });
  }

  it('idempotency that creates a second turn also fails the concurrent-key check', async () => {
    const results = await resultsAgainst(breakages.idempotencyCreatesSecondTurn, ['s1.concurrent-key']);
    expect(statusOf(results, 's1.concurrent-key')).toMatchObject({ status: 'fail', reason: expect.stringMatching(/expected exactly one 202/) });
  });

  it('a 1.1 server (its agent fails on the 1.2 echoContext step) skips the 1.2 checks with that reason', async () => {
    const results = await resultsAgainst(breakages.protocol11, ['s1.context', 's9.continues']);
    for (const id of ['s1.context', 's9.continues']) {
      expect(statusOf(results, id)).toMatchObject({ status: 'skip', reason: expect.stringMatching(/predates protocol 1.2/) });
    }
  });

  it('a heartbeat with an id also breaks the framing of the live stream', async () => {
    const results = await resultsAgainst(breakages.heartbeatWithId, ['s2.live-stream']);
    expect(statusOf(results, 's2.live-stream')).toMatchObject({ status: 'fail', reason: expect.stringMatching(/id 1 differs from the data's seq/) });
  });
});
