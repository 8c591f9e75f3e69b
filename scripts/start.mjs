#!/usr/bin/env node
// `npm start`: builds the package (when dist/ is missing or older than src/), builds the
// example app with Vite, then runs the example server with tsx. Works on a fresh clone
// after `npm install`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const example = join(root, 'examples', 'chat');

/** Newest modification time under `dir` (0 when missing). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? newest(path) : statSync(path).mtimeMs;
    if (time > latest) latest = time;
  }
  return latest;
}

const entries = ['dist/index.js', 'dist/react/index.js', 'dist/server/index.js'].map((p) => join(root, p));
const built = entries.every((p) => existsSync(p)) ? Math.min(...entries.map((p) => statSync(p).mtimeMs)) : 0;
if (built < newest(join(root, 'src'))) {
  console.log('Building the lifeline-chat package (npm run build)…');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

console.log('Building the example app (vite build)…');
const { build } = await import('vite');
await build({ configFile: join(example, 'vite.config.ts') });

// tsx runs the TypeScript server as is; signals are forwarded so Ctrl+C stops it cleanly.
const server = spawn(process.execPath, ['--import', 'tsx', join(example, 'server.ts')], { cwd: root, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
