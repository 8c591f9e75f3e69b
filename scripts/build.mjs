/**
 * `npm run build` and the `prepare` script: compiles src/ to dist/ with tsc, then records
 * a hash of the sources it compiled (dist/.sources-sha256, left out of the package).
 *
 * With `--if-stale` (the `prepare` script) it builds only when dist/ was not built from
 * exactly these sources. npm runs `prepare` on `npm install` in the repository and again on
 * `npm pack`; without this check `npm install && npm pack` compiles the same sources twice.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.sources-sha256');
/** What the build reads besides src/: a change to either compiles differently. */
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json'];

function filesBelow(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesBelow(path) : [path];
  });
}

/** One hash over every source's path and bytes, in a fixed order. */
function sourcesHash() {
  const hash = createHash('sha256');
  const files = [...filesBelow(join(root, 'src')), ...CONFIGS.map((name) => join(root, name))];
  for (const file of files.map((path) => relative(root, path)).sort()) {
    hash.update(`${file}\0`).update(readFileSync(join(root, file))).update('\0');
  }
  return hash.digest('hex');
}

const hash = sourcesHash();
if (process.argv.includes('--if-stale') && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) {
  console.log('dist/ was built from these sources already: not building again.');
  process.exit(0);
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const built = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
writeFileSync(stamp, `${hash}\n`);
