#!/usr/bin/env node
/**
 * First step of `npm test`: the browser tests need Chromium and the Redis tests need
 * `redis-server`. When one is missing, install it if this machine lets us (Debian or
 * Ubuntu with apt-get, as root or with passwordless sudo); otherwise stop at once with
 * one line naming the command to run, rather than failing minutes later in the middle of
 * the suite.
 *
 * Chromium is found where test/chromium.ts looks: `LIFELINE_CHROMIUM` when set, else
 * /usr/bin/chromium, else Playwright's own download.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/** Whether an executable named `name` is on `PATH`. */
export function onPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

async function playwrightChromium() {
  try {
    const { chromium } = await import('playwright-core');
    return existsSync(chromium.executablePath());
  } catch {
    return false;
  }
}

async function hasChromium(env) {
  if (env.LIFELINE_CHROMIUM) return existsSync(env.LIFELINE_CHROMIUM);
  return existsSync(SYSTEM_CHROMIUM) || (await playwrightChromium());
}

/** What is missing: a subset of `['chromium', 'redis-server']`. */
export async function findMissing(env = process.env) {
  const missing = [];
  if (!(await hasChromium(env))) missing.push('chromium');
  if (!onPath('redis-server', env)) missing.push('redis-server');
  return missing;
}

/** `ubuntu`, `debian`, … from /etc/os-release (`ID`), or '' when unknown. */
function osId() {
  try {
    return /^ID=("?)([\w.-]+)\1$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[2] ?? '';
  } catch {
    return '';
  }
}

/**
 * How to get `missing` onto this machine. Ubuntu's `chromium` package only installs a snap,
 * which containers lack, so there Playwright's Chromium is used instead.
 * @param {{ missing: string[], root: boolean, sudo: boolean, aptGet: boolean, os: string }} machine
 * @returns {{ kind: 'ok' } | { kind: 'install', commands: string[][], hint: string } | { kind: 'stop', line: string }}
 */
export function plan({ missing, root, sudo, aptGet, os }) {
  if (missing.length === 0) return { kind: 'ok' };
  const viaPlaywright = os === 'ubuntu' && missing.includes('chromium');
  const apt = missing.filter((name) => !(viaPlaywright && name === 'chromium'));
  const as = root ? [] : ['sudo', '-n'];
  const commands = [];
  const shown = [];
  if (apt.length > 0) {
    commands.push([...as, 'apt-get', 'update', '-qq'], [...as, 'apt-get', 'install', '-y', '-qq', ...apt]);
    shown.push(`${root ? '' : 'sudo '}apt-get install -y ${apt.join(' ')}`);
  }
  if (viaPlaywright) {
    commands.push(['npx', 'playwright', 'install', '--with-deps', 'chromium']);
    shown.push('npx playwright install --with-deps chromium');
  }
  const hint = shown.join(' && ');
  const what = missing.map((name) => (name === 'chromium' ? 'Chromium' : name)).join(' and ');
  if (!aptGet) return { kind: 'stop', line: `npm test needs ${what}: install ${missing.join(' and ')} with this machine's package manager (or point LIFELINE_CHROMIUM at a Chromium), then run npm test again.` };
  if (!root && !sudo) return { kind: 'stop', line: `npm test needs ${what}: run \`${hint}\`, then npm test again.` };
  return { kind: 'install', commands, hint };
}

function sudoWorks(env) {
  return onPath('sudo', env) && spawnSync('sudo', ['-n', 'true'], { env, stdio: 'ignore' }).status === 0;
}

async function main() {
  const env = process.env;
  const missing = await findMissing(env);
  const root = process.getuid?.() === 0;
  const step = plan({ missing, root, sudo: !root && sudoWorks(env), aptGet: onPath('apt-get', env), os: osId() });
  if (step.kind === 'ok') return 0;
  if (step.kind === 'stop') {
    console.error(step.line);
    return 1;
  }
  console.error(`preflight: ${missing.join(' and ')} missing, installing: ${step.hint}`);
  for (const [file, ...args] of step.commands) {
    const result = spawnSync(file, args, { env: { ...env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'inherit', 'inherit'] });
    if (result.status !== 0) {
      console.error(`npm test needs ${missing.join(' and ')}: \`${[file, ...args].join(' ')}\` failed; run \`${step.hint}\`, then npm test again.`);
      return 1;
    }
  }
  const still = await findMissing(env);
  if (still.length > 0) {
    console.error(`npm test needs ${still.join(' and ')}, still missing after \`${step.hint}\`: install it, then run npm test again.`);
    return 1;
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main();
