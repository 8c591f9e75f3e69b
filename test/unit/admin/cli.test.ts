/** `lifeline-chat-admin` as support runs it: a child process against a real server, its output and exit code. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminArgs } from '../../../src/admin/args.js';
import { controlledAgent, type TurnControl } from '../../fixtures/agents.js';
import { startTestServer, submitMessage, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';

const CLI = fileURLToPath(new URL('../../../src/admin/cli.ts', import.meta.url));
const AUTH = ['--header', 'Authorization: Bearer admin-token'];

function admin(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

let server: TestServer;
let live: { turnId: string; control: TurnControl };
let ended: string;

beforeAll(async () => {
  const agent = controlledAgent();
  server = await startTestServer({
    agent: agent.agent,
    undeliveredAfterMs: 1,
    cancelPollMs: 20,
    authorizeOperator: (request) => {
      if (request.headers.get('authorization') !== 'Bearer admin-token') throw new Error('no');
      return 'cli-operator';
    },
    audit: () => undefined,
  });
  ended = (await submitMessage(server.baseUrl, 'conv-cli', 'done')).turnId;
  const first = await agent.nextTurn();
  await first.action({ callId: 'c1', name: 'lookup', status: 'completed', output: { rows: 3 } });
  await first.end();
  await waitForTurnEnd(server.log, ended);
  const liveId = (await submitMessage(server.baseUrl, 'conv-cli', 'hang')).turnId;
  live = { turnId: liveId, control: await agent.nextTurn() };
  await live.control.delta('partial');
});

afterAll(async () => {
  await server?.close();
});

describe('lifeline-chat-admin', () => {
  it('lists undelivered turns (exit 1: problems found) and live ones (exit 0), as a table or JSON', async () => {
    const undelivered = await admin([server.baseUrl, 'list', '--undelivered', ...AUTH]);
    expect(undelivered.code).toBe(1);
    expect(undelivered.stdout).toMatch(new RegExp(`^${ended}\\s+anonymous\\s+conv-cli\\s+complete\\s+pending`, 'm'));
    const json = await admin([server.baseUrl, 'list', '--live', '--json', ...AUTH]);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { turns: { id: string }[] }).turns.map((turn) => turn.id)).toEqual([live.turnId]);
    const none = await admin([server.baseUrl, 'list', '--mismatch', ...AUTH]);
    expect([none.code, none.stdout.trim()]).toEqual([0, 'No turns.']);
  });

  it("shows a turn with its events, the action's JSON output included", async () => {
    const shown = await admin([server.baseUrl, 'show', ended, ...AUTH]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('"output":{"rows":3}');
    expect(shown.stdout).toMatch(/turn\.end/);
    const unknown = await admin([server.baseUrl, 'show', 'no-such-turn', ...AUTH]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 turn_not_found/);
  });

  it('ends a live turn with the reason; exit 0', async () => {
    const result = await admin([server.baseUrl, 'end', live.turnId, '--reason', 'support ticket 42', '--json', ...AUTH]);
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as { turn: { status: string } }).turn.status).toBe('failed');
    expect(live.control.context.signal.aborted).toBe(true);
  });

  it('exits 3 when refused, off or unreachable, and 2 on bad usage', async () => {
    expect((await admin([server.baseUrl, 'list', '--stuck'])).code).toBe(3);
    expect((await admin([server.baseUrl, 'list', '--stuck', '--header', 'Authorization: Bearer wrong'])).code).toBe(3);
    expect((await admin(['http://127.0.0.1:1/api', 'list', '--stuck', ...AUTH])).code).toBe(3);
    const bad = await admin([server.baseUrl, 'list', '--stuck', '--failed']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/exactly one of/);
    expect((await admin([server.baseUrl, 'end', ended])).code).toBe(2);
    expect((await admin(['list', '--stuck'])).code).toBe(2);
  });

  it('parses every command and option', () => {
    expect(parseAdminArgs(['http://h/api', 'list', '--stuck', '--principal', 'p', '--since', '2026-01-01T00:00:00Z', '--limit', '5'])).toMatchObject({
      command: { kind: 'list', state: 'stuck', query: { principal: 'p', since: '2026-01-01T00:00:00Z', limit: '5' } },
    });
    expect(() => parseAdminArgs(['http://h/api', 'show', 'a.b'])).toThrow(/not a turn id/);
    expect(() => parseAdminArgs(['http://h/api', 'list', '--stuck', '--header', 'nocolon'])).toThrow(/Name: value/);
  });
});
