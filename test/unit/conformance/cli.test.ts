/** `lifeline-chat-conformance` as a user runs it: a child process, its output and its exit code. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../../../src/conformance/cli-args.js';
import { runConformance } from '../../../src/conformance/index.js';
import { breakages } from './breakages.js';
import { startConformanceServer } from './reference-server.js';

const CLI = fileURLToPath(new URL('../../../src/conformance/cli.ts', import.meta.url));

function runCli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('lifeline-chat-conformance command', () => {
  it('prints one line per check and the tally, exit 0, against a conforming server', async () => {
    const server = await startConformanceServer();
    try {
      const { code, stdout } = await runCli([server.baseUrl, '--only', 's1,s4.empty']);
      const lines = stdout.trim().split('\n');
      expect(lines.slice(0, -1).every((line) => line.startsWith('PASS s1.') || line.startsWith('PASS s4.empty'))).toBe(true);
      expect(lines.at(-1)).toBe('10 passed, 0 failed, 0 skipped');
      expect(code).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('exits 1 and says which check failed against a broken server; --json is machine-readable', async () => {
    const server = await startConformanceServer({ breakage: breakages.untypedErrors });
    try {
      const text = await runCli([server.baseUrl, '--only', 's0']);
      expect(text.stdout).toMatch(/^FAIL s0\.error-bodies .*not application\/json/m);
      expect(text.stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed, 0 skipped');
      expect(text.code).toBe(1);
      const json = await runCli([server.baseUrl, '--only', 's0', '--json']);
      const report = JSON.parse(json.stdout) as { ok: boolean; failed: number; results: { id: string; status: string }[] };
      expect(report).toMatchObject({ ok: false, failed: 1, results: [{ id: 's0.error-bodies', status: 'fail' }] });
      expect(json.code).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('sends --header on every request', async () => {
    const server = await startConformanceServer({
      authorize: (request) => {
        if (request.headers.get('authorization') !== 'Bearer conformance') throw new Error('no token');
        return 'tester';
      },
    });
    try {
      const without = await runConformance({ baseUrl: server.baseUrl, only: ['s4.empty'] });
      expect(without.results[0]).toMatchObject({ status: 'fail', reason: expect.stringMatching(/answered 401/) });
      const withHeader = await runCli([server.baseUrl, '--only', 's4.empty', '--header', 'Authorization: Bearer conformance']);
      expect(withHeader.stdout).toMatch(/^PASS s4\.empty/m);
      expect(withHeader.code).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('exits 2 on bad usage: no URL, an unknown section, a bad header', async () => {
    expect(() => parseCliArgs([])).toThrow(/base URL/);
    const unknown = await runCli(['http://127.0.0.1:9/api', '--only', 's7']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/names no section/);
    expect(() => parseCliArgs(['http://x/api', '--header', 'no colon'])).toThrow(/Name: value/);
    expect(() => parseCliArgs(['http://x/api', '--timeout', '1s'])).toThrow(/milliseconds/);
  });

  it('parses options into runConformance options', () => {
    expect(parseCliArgs(['http://h/api', '--only', 's2, s3.paging', '--header', 'X-A: 1', '--header', 'Authorization: Bearer a:b', '--pause', '500', '--json'])).toEqual({
      help: false,
      json: true,
      options: { baseUrl: 'http://h/api', headers: { 'x-a': '1', authorization: 'Bearer a:b' }, pauseMs: 500, only: ['s2', 's3.paging'] },
    });
  });
});
