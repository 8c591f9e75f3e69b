/**
 * Headless Chromium launched as a plain child process: no DevTools session is attached
 * (Playwright's slows native EventSource about 6×, see docs/faults.md), so pages measure
 * themselves and post their figures back to the bench server.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CHROMIUM_FLAGS, chromiumExecutable } from '../../test/chromium.js';

/** The browser binary: `LIFELINE_CHROMIUM`, else Debian's (a plain process needs a real path). */
export const chromiumPath = chromiumExecutable ?? '/usr/bin/chromium';

const BASE_FLAGS = ['--headless', ...CHROMIUM_FLAGS];

export interface BrowserRun {
  readonly process: ChildProcess;
  /** Kills the whole process group and removes the profile directory. */
  close(): Promise<void>;
}

/**
 * Opens `url` in a fresh headless Chromium with its own throw-away profile.
 * `extraFlags` adds switches such as `--enable-precise-memory-info`.
 */
export function openInChromium(url: string, extraFlags: readonly string[] = []): BrowserRun {
  const profile = mkdtempSync(join(tmpdir(), 'lifeline-bench-'));
  // detached: the browser becomes a process group leader, so one kill reaches its
  // renderer, GPU and zygote children too.
  const child = spawn(chromiumPath, [...BASE_FLAGS, `--user-data-dir=${profile}`, ...extraFlags, url], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 20_000) stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let closing: Promise<void> | undefined;
  return {
    process: child,
    close() {
      closing ??= (async () => {
        if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // Already gone.
          }
          await exited;
        }
        rmSync(profile, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

/** `Chromium 156.0.8078.114 …` as the binary reports it. */
export function chromiumVersion(): string {
  try {
    const out = execFileSync(chromiumPath, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.trim().split('\n').pop() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
