#!/usr/bin/env node
/**
 * Size budgets of the published entry points, measured the way a user's bundler sees
 * them: esbuild bundles the BUILT file from `dist/` with its runtime dependencies
 * (@microsoft/fetch-event-source, idb, nanoid ship inside the client), minifies, and
 * gzip (level 9) compresses it. Budgets are in kB of 1024 bytes.
 *
 * `node scripts/size.mjs` prints the table and exits 1 when a budget is exceeded (part
 * of `npm test`); `--by-module` adds where each entry's minified bytes come from. `scripts/bench.mjs` imports {@link measureBundleSizes} so the
 * benchmark page reports exactly the same figures.
 */
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** 1 kB = 1024 bytes throughout this file and its output. */
export const KB = 1024;

/**
 * Budgets, min+gz bytes. The client budget applies to the build that leaves zod to the app.
 *
 * The client's target is 25 kB (issue 23), printed beside the enforced ceiling, which sits
 * just above the latest measured figure so the suite catches any growth: 28.38 kB (29 058 B)
 * on 2026-12-03, after the hot path's delta shortcut and schema v2's text-run chunks
 * (+328 B) and the message step (+15 B), bought for throughput and durability (docs/size.md,
 * round 10), and one abort listener per signal (+36 B, round 11). Readability comes
 * before bytes: a change that buys it, or a measured budget of an issue, may raise the
 * ceiling by what it measures, recorded in docs/size.md; nothing else may.
 * docs/size.md records what each behaviour costs and what closing the gap would take.
 *
 * `lifeline-chat/devtools (production build)` has a budget only to prove production builds
 * drop the panel; the panel's development build is printed with no budget.
 */
export const BUDGETS = {
  'lifeline-chat (without zod)': 28.38 * KB,
  'lifeline-chat/react': 2 * KB,
  // Type-only imports of `ai`: none of its code is in this entry.
  'lifeline-chat/ai-sdk': 4.5 * KB,
  'lifeline-chat/ai-sdk/react': 1 * KB,
  // Not a size budget: proof that production builds drop the panel (its development build has no budget).
  'lifeline-chat/devtools (production build)': 0.25 * KB,
};

/** Product targets printed beside the enforced budgets (min+gz bytes). */
export const TARGETS = {
  'lifeline-chat (without zod)': 25 * KB,
  'lifeline-chat/react': 2 * KB,
};

/**
 * Marks every import that leaves `dir` (a relative path into another entry of the
 * package) as external, under the name the user would import: the React entry's size
 * must not count the client it sits on.
 */
function keepInside(dir, asName) {
  return {
    name: 'keep-inside',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        const target = resolve(args.resolveDir, args.path);
        if (target.startsWith(dir + sep)) return undefined;
        return { path: asName, external: true };
      });
    },
  };
}

/**
 * The entries measured. `external` lists packages left to the app (bare names also
 * match their subpaths, e.g. `zod/v4`).
 */
function entries() {
  return [
    { name: 'lifeline-chat (with zod)', file: 'index.js', platform: 'browser', external: [] },
    { name: 'lifeline-chat (without zod)', file: 'index.js', platform: 'browser', external: ['zod'] },
    {
      name: 'lifeline-chat/react',
      file: 'react/index.js',
      platform: 'browser',
      external: ['react', 'react-dom', 'lifeline-chat'],
      plugins: [keepInside(join(dist, 'react'), 'lifeline-chat')],
    },
    {
      name: 'lifeline-chat/ai-sdk',
      file: 'ai-sdk/index.js',
      platform: 'browser',
      external: ['ai', 'lifeline-chat'],
      plugins: [keepInside(join(dist, 'ai-sdk'), 'lifeline-chat')],
    },
    {
      name: 'lifeline-chat/ai-sdk/react',
      file: 'ai-sdk/react/index.js',
      platform: 'browser',
      external: ['react', 'ai', 'lifeline-chat'],
      plugins: [keepInside(join(dist, 'ai-sdk', 'react'), 'lifeline-chat/ai-sdk')],
    },
    // The panel as a development build bundles it, and what a production build keeps of it (nothing but a no-op).
    ...['development', 'production'].map((mode) => ({
      name: `lifeline-chat/devtools (${mode} build)`,
      file: 'devtools/index.js',
      platform: 'browser',
      external: ['react', 'react-dom', 'lifeline-chat'],
      plugins: [keepInside(join(dist, 'devtools'), 'lifeline-chat')],
      define: { 'process.env.NODE_ENV': JSON.stringify(mode) },
    })),
    { name: 'lifeline-chat/server (without zod)', file: 'server/index.js', platform: 'node', external: ['zod'] },
  ];
}

/**
 * Bundles, minifies and gzips each entry of `dist/`.
 * @returns {Promise<Array<{ name: string, minified: number, gzipped: number, budget?: number }>>}
 */
export async function measureBundleSizes() {
  if (!existsSync(join(dist, 'index.js'))) {
    throw new Error(`${relative(process.cwd(), dist)}/index.js is missing: run \`npm run build\` first`);
  }
  const rows = [];
  for (const entry of entries()) {
    const file = join(dist, entry.file);
    if (!existsSync(file)) {
      rows.push({ name: entry.name, missing: `dist/${entry.file} not built` });
      continue;
    }
    const result = await build({
      entryPoints: [file],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: entry.platform,
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      legalComments: 'none',
      external: entry.external.flatMap((name) => [name, `${name}/*`]),
      plugins: entry.plugins ?? [],
      define: entry.define ?? {},
      metafile: true,
    });
    const code = result.outputFiles[0].contents;
    const gzipped = gzipSync(code, { level: 9 }).length;
    const output = Object.values(result.metafile.outputs)[0];
    const modules = Object.entries(output.inputs)
      .map(([path, input]) => ({ path, minified: input.bytesInOutput }))
      .filter((module) => module.minified > 0)
      .sort((a, b) => b.minified - a.minified);
    rows.push({
      name: entry.name,
      minified: code.length,
      gzipped,
      modules,
      budget: BUDGETS[entry.name],
      target: TARGETS[entry.name],
    });
  }
  return rows;
}

/** `12.34 kB` with kB = 1024 bytes. */
export function formatKb(bytes) {
  return `${(bytes / KB).toFixed(2)} kB`;
}

/** The rows as a Markdown table (also readable on a terminal). */
export function sizeTable(rows) {
  const lines = ['| entry | min | min+gz | enforced budget | target |', '|---|---:|---:|---|---|'];
  for (const row of rows) {
    if (row.missing) {
      lines.push(`| ${row.name} | n/a | n/a (${row.missing}) | | |`);
      continue;
    }
    const budget =
      row.budget === undefined ? '' : `${formatKb(row.budget)} ${row.gzipped <= row.budget ? 'ok' : '**EXCEEDED**'}`;
    const target =
      row.target === undefined ? '' : `${formatKb(row.target)} ${row.gzipped <= row.target ? 'met' : '**not met**'}`;
    lines.push(`| ${row.name} | ${formatKb(row.minified)} | ${formatKb(row.gzipped)} | ${budget} | ${target} |`);
  }
  return lines.join('\n');
}

async function main() {
  const rows = await measureBundleSizes();
  console.log('Bundle sizes (esbuild bundle + minify, gzip -9; 1 kB = 1024 bytes)\n');
  console.log(sizeTable(rows));
  // `--by-module`: where the minified bytes of each entry come from (before gzip).
  if (process.argv.includes('--by-module')) {
    for (const row of rows.filter((r) => r.modules)) {
      console.log(`\n${row.name}: minified bytes by module`);
      for (const module of row.modules) console.log(`${String(module.minified).padStart(8)}  ${module.path}`);
    }
  }
  const over = rows.filter((row) => row.budget !== undefined && row.gzipped > row.budget);
  const missing = rows.filter((row) => row.missing && BUDGETS[row.name] !== undefined);
  for (const row of over) console.error(`size: ${row.name} is ${formatKb(row.gzipped)}, budget ${formatKb(row.budget)}`);
  for (const row of missing) console.error(`size: ${row.name}: ${row.missing}`);
  if (over.length > 0 || missing.length > 0) process.exit(1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(`size: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
