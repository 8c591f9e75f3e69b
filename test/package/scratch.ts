/**
 * The package as a stranger gets it: a copy of the repository's files as a fresh clone
 * would have them (tracked and not ignored; no dist/), packed with `npm pack` (so the
 * `prepare` build runs), and the tarball installed with npm into scratch apps in a temp
 * directory. Everything here runs once per test file; the tests read the results.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const repoModules = join(repoRoot, 'node_modules');

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; a non-zero exit is a result, not a throw. */
export async function command(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? failed.message };
  }
}

async function mustRun(file: string, args: readonly string[], cwd: string): Promise<string> {
  const result = await command(file, args, cwd);
  if (result.code !== 0) throw new Error(`${file} ${args.join(' ')} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** The files a fresh clone has, relative to the repository root. */
async function cloneFiles(): Promise<string[]> {
  const listed = await mustRun('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], repoRoot);
  return listed.split('\0').filter((path) => path !== '' && path !== 'node_modules');
}

export interface PackedPackage {
  /** The temp directory holding everything below; removed by {@link disposeScratch}. */
  work: string;
  tarball: string;
  /** Paths inside the tarball, as `npm pack --json` reports them, sorted. */
  files: string[];
  /** The fresh clone it was packed from (built by that pack). */
  clone: string;
}

/** Copies a fresh-clone view of the repository and packs it (the prepare build runs there). */
export async function packFreshClone(): Promise<PackedPackage> {
  const work = mkdtempSync(join(tmpdir(), 'lifeline-package-'));
  const clone = join(work, 'clone');
  for (const path of await cloneFiles()) {
    const target = join(clone, path);
    mkdirSync(dirname(target), { recursive: true });
    cpSync(join(repoRoot, path), target);
  }
  // The clone's `npm ci` is not repeated: its dev tools (tsc) come from this checkout.
  symlinkSync(repoModules, join(clone, 'node_modules'), 'dir');
  const output = await mustRun('npm', ['pack', '--json', '--pack-destination', work], clone);
  const [report] = JSON.parse(output) as { filename: string; files: { path: string }[] }[];
  if (!report) throw new Error(`npm pack printed no report:\n${output}`);
  return { work, tarball: join(work, report.filename), files: report.files.map((file) => file.path).sort(), clone };
}

export interface ScratchApps {
  /** A consumer with React, ioredis and @types/node next to the package. */
  app: string;
  /** A consumer with the package and its dependencies only: no @types/node, no React. */
  web: string;
}

/**
 * Installs the tarball with npm into `app`, from the npm cache when it holds the package's
 * dependencies (the registry otherwise), then clones that install into `web` and adds
 * the app-side packages to `app` from this checkout (React and Redis are the app's
 * choice, so they are not the package's dependencies to install).
 */
export async function installScratchApps(packed: PackedPackage): Promise<ScratchApps> {
  const app = join(packed.work, 'app');
  const web = join(packed.work, 'web');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }, null, 2));
  const install = ['install', '--no-audit', '--no-fund', '--no-package-lock', packed.tarball];
  const offline = await command('npm', [...install, '--offline'], app);
  if (offline.code !== 0) {
    if (!offline.stderr.includes('ENOTCACHED')) throw new Error(`npm install failed:\n${offline.stderr}`);
    await mustRun('npm', [...install, '--prefer-offline'], app);
  }
  cpSync(app, web, { recursive: true, verbatimSymlinks: true });
  for (const name of ['react', 'react-dom', '@types/react', '@types/react-dom', '@types/node', 'ioredis', 'ai', '@ai-sdk/react', 'next']) {
    const target = join(app, 'node_modules', name);
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(join(repoModules, name), target, 'dir');
  }
  return { app, web };
}

export function disposeScratch(packed: PackedPackage | undefined): void {
  if (packed) rmSync(packed.work, { recursive: true, force: true });
}

/** The installed package's manifest. */
export function installedManifest(app: string): { exports: Record<string, unknown>; files?: string[] } {
  return JSON.parse(readFileSync(join(app, 'node_modules', 'lifeline-chat', 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
    files?: string[];
  };
}
