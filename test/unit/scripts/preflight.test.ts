import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { plan } from '../../../scripts/preflight.mjs';

const script = fileURLToPath(new URL('../../../scripts/preflight.mjs', import.meta.url));
const both = ['chromium', 'redis-server'];

/** Runs the preflight as `npm test` does, with the environment given; never throws. */
function preflight(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script], { env }, (error, _stdout, stderr) => {
      resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stderr });
    });
  });
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A PATH of shell scripts standing in for system commands. */
function fakeBin(scripts: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lifeline-preflight-'));
  dirs.push(dir);
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

describe('preflight plan', () => {
  it('does nothing when Chromium and redis-server are there', () => {
    expect(plan({ missing: [], root: false, sudo: false, aptGet: false, os: '' })).toEqual({ kind: 'ok' });
  });

  it('installs with apt-get as root, and through sudo -n with passwordless sudo', () => {
    expect(plan({ missing: both, root: true, sudo: false, aptGet: true, os: 'debian' })).toEqual({
      kind: 'install',
      commands: [
        ['apt-get', 'update', '-qq'],
        ['apt-get', 'install', '-y', '-qq', 'chromium', 'redis-server'],
      ],
      hint: 'apt-get install -y chromium redis-server',
    });
    const viaSudo = plan({ missing: ['redis-server'], root: false, sudo: true, aptGet: true, os: 'debian' });
    expect(viaSudo).toMatchObject({ kind: 'install', hint: 'sudo apt-get install -y redis-server' });
    expect(viaSudo.kind === 'install' && viaSudo.commands.every((command) => command[0] === 'sudo' && command[1] === '-n')).toBe(true);
  });

  it('takes Playwright’s Chromium on Ubuntu, whose chromium package is a snap', () => {
    const step = plan({ missing: both, root: true, sudo: false, aptGet: true, os: 'ubuntu' });
    expect(step).toMatchObject({ kind: 'install', hint: 'apt-get install -y redis-server && npx playwright install --with-deps chromium' });
  });

  it('stops with one line naming the command when it cannot install', () => {
    const noRoot = plan({ missing: both, root: false, sudo: false, aptGet: true, os: 'debian' });
    expect(noRoot).toEqual({ kind: 'stop', line: 'npm test needs Chromium and redis-server: run `sudo apt-get install -y chromium redis-server`, then npm test again.' });
    const noApt = plan({ missing: ['redis-server'], root: true, sudo: false, aptGet: false, os: '' });
    expect(noApt.kind === 'stop' && noApt.line).toMatch(/^npm test needs redis-server: install redis-server with this machine's package manager/);
  });
});

describe('preflight script', () => {
  it('passes at once on this machine, where both are installed', async () => {
    expect(await preflight(process.env)).toEqual({ code: 0, stderr: '' });
  });

  it('stops with exit 1 and a single line when redis-server is missing and there is no apt-get', async () => {
    const result = await preflight({ PATH: fakeBin({}), LIFELINE_CHROMIUM: process.execPath });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^npm test needs redis-server: install redis-server/)]);
  });

  it('runs apt-get for what is missing, then checks again and says what is still missing', async () => {
    const bin = fakeBin({
      'apt-get': 'echo "$@" >> "${0%/*}/apt.log"',
      // Whether the test runs as root or not: passwordless sudo that runs its command.
      sudo: '[ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@"',
    });
    const result = await preflight({ PATH: bin, LIFELINE_CHROMIUM: process.execPath });
    const calls = readFileSync(join(bin, 'apt.log'), 'utf8').trim().split('\n');
    expect(calls).toEqual(['update -qq', 'install -y -qq redis-server']);
    // The fake apt-get installed nothing: the second look says so.
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n').at(-1)).toMatch(/^npm test needs redis-server, still missing after `(sudo )?apt-get install -y redis-server`/);
  });
});
