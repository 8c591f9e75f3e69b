/**
 * The package as an app gets it: packed from a fresh clone (the prepare build), installed
 * from the tarball with npm into scratch apps, imported from Node, type-checked under a
 * strict consumer's settings (with and without Node types), linted by publint and attw,
 * and the documentation's code blocks type-checked against it.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command, disposeScratch, installScratchApps, installedManifest, packFreshClone, repoRoot, type CommandResult, type PackedPackage, type ScratchApps } from './scratch.js';
import { CHECKED_LANGUAGES, UNCHECKED_LANGUAGES, extractSnippets, snippetFileName, snippetSource, type Snippet } from './snippets.js';
import { createProgram, typeCheck } from './typecheck.js';

const fixtures = join(repoRoot, 'test', 'package', 'fixtures');
const bin = (path: string) => join(repoRoot, 'node_modules', path);

/** The consumer's compiler settings: the project's own strictness. */
const STRICT = {
  target: 'ES2022',
  lib: ['ES2023', 'DOM', 'DOM.Iterable'],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  jsx: 'react-jsx',
  types: ['node'],
};
const BUNDLER = { module: 'ESNext', moduleResolution: 'Bundler' };
const NODENEXT = { module: 'NodeNext', moduleResolution: 'NodeNext' };

/** Every Markdown file a reader follows: the README (shipped), docs/ and the example's README. */
function documents(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs')).filter((name) => name.endsWith('.md'));
  return ['README.md', ...docs.map((name) => `docs/${name}`), 'examples/chat/README.md'];
}

const report = (result: CommandResult): string => `exit ${result.code}\n${result.stdout}${result.stderr}`;

let packed: PackedPackage | undefined;
let apps: ScratchApps;
let snippets: Snippet[] = [];
const snippetFiles: string[] = [];
/** The linters run in their own processes while the type checks run here. */
let linters: { publint: Promise<CommandResult>; attw: Promise<CommandResult> } | undefined;

beforeAll(async () => {
  packed = await packFreshClone();
  apps = await installScratchApps(packed);
  const { app, web } = apps;

  writeFileSync(join(app, 'consumer.tsx'), readFileSync(join(fixtures, 'consumer.tsx')));
  writeFileSync(join(web, 'edge-route.ts'), readFileSync(join(fixtures, 'edge-route.ts')));
  mkdirSync(join(app, 'snippets'));
  snippets = documents().flatMap((doc) => extractSnippets(doc, join(repoRoot, doc)));
  for (const snippet of snippets.filter((s) => (CHECKED_LANGUAGES as readonly string[]).includes(s.lang))) {
    const file = join('snippets', snippetFileName(snippet));
    writeFileSync(join(app, file), snippetSource(snippet));
    snippetFiles.push(file);
  }

  linters = {
    publint: command(process.execPath, [bin('publint/src/cli.js'), 'run', packed.tarball, '--strict'], packed.work),
    attw: command(process.execPath, [bin('@arethetypeswrong/cli/dist/index.js'), packed.tarball, '--profile', 'esm-only', '--no-definitely-typed', '--format', 'table-flipped', '--no-color', '--no-emoji'], packed.work),
  };
}, 240_000);

const lines = (diagnostics: string[]) => diagnostics.join('\n');

afterAll(async () => {
  await Promise.allSettled(Object.values(linters ?? {}));
  disposeScratch(packed);
});

const installed = (...path: string[]) => join(apps.app, 'node_modules', 'lifeline-chat', ...path);

describe('the packed package', () => {
  it('builds on pack and ships dist/, the sources its maps name, LICENSE and README only', () => {
    const files = packed!.files;
    for (const required of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/react/index.js', 'dist/server/index.js', 'dist/server/node/index.js', 'dist/server/log/redis/index.js']) {
      expect(files, required).toContain(required);
    }
    expect(files.filter((file) => !/^(dist|src)\/|^(LICENSE|README\.md|package\.json)$/.test(file))).toEqual([]);

    const maps = files.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot = '' } = JSON.parse(readFileSync(installed(map), 'utf8')) as { sources: string[]; sourceRoot?: string };
      for (const source of sources) {
        const path = posix.normalize(posix.join(posix.dirname(map), sourceRoot, source));
        if (!files.includes(path)) missing.push(`${map} → ${path}`);
      }
    }
    expect(missing).toEqual([]);

    const license = readFileSync(installed('LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain('Copyright (c) 2026 The Lifeline authors');
  });

  it('imports every entry from Node as ESM; the Node adapter only from lifeline-chat/server/node', async () => {
    const manifest = installedManifest(apps.app);
    expect(Object.keys(manifest.exports).sort()).toEqual(['.', './ai-sdk', './ai-sdk/react', './conformance', './devtools', './devtools/production', './package.json', './react', './server', './server/ai-sdk', './server/node', './server/redis']);
    const script = [
      "const entries = ['lifeline-chat', 'lifeline-chat/react', 'lifeline-chat/server', 'lifeline-chat/server/node', 'lifeline-chat/server/redis', 'lifeline-chat/ai-sdk', 'lifeline-chat/ai-sdk/react', 'lifeline-chat/server/ai-sdk', 'lifeline-chat/conformance', 'lifeline-chat/devtools', 'lifeline-chat/devtools/production'];",
      'const names = {};',
      'for (const entry of entries) names[entry] = Object.keys(await import(entry)).sort();',
      'console.log(JSON.stringify(names));',
    ].join('\n');
    writeFileSync(join(apps.app, 'import-all.mjs'), script);
    const result = await command(process.execPath, ['import-all.mjs'], apps.app);
    expect(result.code, report(result)).toBe(0);
    const names = JSON.parse(result.stdout) as Record<string, string[]>;
    expect(names['lifeline-chat']).toEqual(expect.arrayContaining(['createLifeline', 'LifelineError', 'createMemoryStore']));
    expect(names['lifeline-chat/react']).toEqual(expect.arrayContaining(['LifelineProvider', 'useConversation', 'useTurn']));
    expect(names['lifeline-chat/server']).toEqual(expect.arrayContaining(['createLifelineHandler', 'createMemoryTurnLog']));
    expect(names['lifeline-chat/server']).not.toContain('serve');
    expect(names['lifeline-chat/server']).not.toContain('toNodeListener');
    expect(names['lifeline-chat/server/node']).toEqual(['DEFAULT_DRAIN_MS', 'answerRefusedRequests', 'serve', 'toNodeListener']);
    expect(names['lifeline-chat/server/redis']).toEqual(expect.arrayContaining(['createRedisTurnLog']));
    expect(names['lifeline-chat/ai-sdk']).toEqual(expect.arrayContaining(['createChatTransport']));
    expect(names['lifeline-chat/ai-sdk/react']).toEqual(['useInitialMessages']);
    expect(names['lifeline-chat/server/ai-sdk']).toEqual(expect.arrayContaining(['uiMessageAgent']));
    expect(names['lifeline-chat/conformance']).toEqual(expect.arrayContaining(['runConformance']));
    expect(names['lifeline-chat/devtools']).toEqual(['LifelineDevtools']);
    expect(names['lifeline-chat/devtools/production']).toEqual(['LifelineDevtools']);
  });

  it('loads every entry with require() where Node allows require(esm), ERR_REQUIRE_ESM before; no entry is import-only', async () => {
    const manifest = installedManifest(apps.app);
    const conditions = Object.entries(manifest.exports).filter(([key]) => key !== './package.json');
    // An "import" condition is what made require() fail where it could have worked.
    for (const [key, value] of conditions) expect(Object.keys(value as object), key).toEqual(['types', 'default']);
    const entries = conditions.map(([key]) => (key === '.' ? 'lifeline-chat' : `lifeline-chat/${key.slice(2)}`));
    const script = [
      `const entries = ${JSON.stringify(entries)};`,
      '(async () => {',
      '  const names = {};',
      '  for (const entry of entries) names[entry] = { required: Object.keys(require(entry)).sort(), imported: Object.keys(await import(entry)).sort() };',
      '  console.log(JSON.stringify(names));',
      '})().catch((error) => { console.error(error.code, error.message); process.exit(1); });',
    ].join('\n');
    writeFileSync(join(apps.app, 'require-all.cjs'), script);
    const result = await command(process.execPath, ['require-all.cjs'], apps.app);
    if (!process.features.require_module) {
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('ERR_REQUIRE_ESM');
      return;
    }
    expect(result.code, report(result)).toBe(0);
    const names = JSON.parse(result.stdout) as Record<string, { required: string[]; imported: string[] }>;
    expect(Object.keys(names)).toEqual(entries);
    for (const entry of entries) {
      expect(names[entry]!.required.length, entry).toBeGreaterThan(0);
      expect(names[entry]!.required, entry).toEqual(names[entry]!.imported);
    }
  });

  it('builds once per pack: packing the same sources again does not compile them again', async () => {
    const again = await command('npm', ['pack', '--dry-run', '--json'], packed!.clone);
    expect(again.code, report(again)).toBe(0);
    expect(again.stdout + again.stderr).toContain('dist/ was built from these sources already: not building again.');
    expect(packed!.files).not.toContain('dist/.sources-sha256');
  });

  it.each([['react'], ['ai-sdk/react'], ['devtools']])('starts every built file of lifeline-chat/%s with "use client"', (entry) => {
    const dir = installed('dist', ...entry.split('/'));
    const files = readdirSync(dir).filter((name) => name.endsWith('.js'));
    expect(files).toContain('index.js');
    for (const name of files) {
      const first = readFileSync(join(dir, name), 'utf8').split('\n')[0];
      expect(first, name).toMatch(/^(['"])use client\1;?$/);
    }
  });
});

describe('a strict TypeScript consumer', () => {
  it('type-checks with Bundler resolution', () => {
    const diagnostics = typeCheck(apps.app, { ...STRICT, ...BUNDLER }, ['consumer.tsx']);
    expect(diagnostics, lines(diagnostics)).toEqual([]);
  });

  it('type-checks with NodeNext resolution', () => {
    const diagnostics = typeCheck(apps.app, { ...STRICT, ...NODENEXT }, ['consumer.tsx']);
    expect(diagnostics, lines(diagnostics)).toEqual([]);
  });

  it('type-checks lifeline-chat/server in a project without Node types (an edge or Next.js route)', () => {
    expect(existsSync(join(apps.web, 'node_modules', '@types', 'node'))).toBe(false);
    const diagnostics = typeCheck(apps.web, { ...STRICT, lib: ['ES2023', 'DOM'], types: [], ...BUNDLER }, ['edge-route.ts']);
    expect(diagnostics, lines(diagnostics)).toEqual([]);
  });
});

describe('the documentation', () => {
  it('names the language of every code block', () => {
    const known = [...CHECKED_LANGUAGES, ...UNCHECKED_LANGUAGES] as readonly string[];
    const untagged = snippets.filter((snippet) => !known.includes(snippet.lang)).map((s) => `${s.doc}:${s.line} \`${s.lang}\``);
    expect(untagged).toEqual([]);
    expect(snippetFiles.filter((file) => file.includes('README.md')).length).toBeGreaterThanOrEqual(4);
  });

  it('has TypeScript blocks that type-check against the installed package', () => {
    const diagnostics = typeCheck(apps.app, { ...STRICT, ...BUNDLER }, snippetFiles);
    expect(diagnostics, lines(diagnostics)).toEqual([]);
  });

  it('says how to install the package today, that it is ESM-only, and where the option defaults are', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const install = /^## Install\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
    expect(install).toMatch(/npm install \S*lifeline-chat-0\.1\.0\.tgz/);
    expect(install).toMatch(/named `lifeline-chat` \(the registry name `lifeline` belongs to an unrelated\s+package/);
    expect(install).toMatch(/ESM-only/);
    expect(install).toContain('ERR_REQUIRE_ESM');
    expect(readme).not.toContain('src/types.ts');
  });

  it("lists every entry of the package's exports in the README's import table", () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const rows = new Set([...readme.matchAll(/^\| `(lifeline[^`]*)` \|/gm)].map((match) => match[1]));
    const entries = Object.keys(installedManifest(apps.app).exports)
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? 'lifeline-chat' : `lifeline-chat/${key.slice(2)}`));
    expect(entries.filter((entry) => !rows.has(entry))).toEqual([]);
  });

  it("documents every option's default in the declarations the package ships", () => {
    const roots = ['index', 'react/index', 'server/index', 'server/node/index', 'server/log/redis/index'].map((entry) => `node_modules/lifeline-chat/dist/${entry}.d.ts`);
    const program = createProgram(apps.app, { ...STRICT, ...NODENEXT }, roots);
    const checker = program.getTypeChecker();
    const undocumented: string[] = [];
    const seen = new Set<string>();
    for (const root of roots) {
      const module = checker.getSymbolAtLocation(program.getSourceFile(join(apps.app, root))!)!;
      for (const exported of checker.getExportsOfModule(module)) {
        const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
        if (!(symbol.flags & ts.SymbolFlags.Interface) || !/Options$/.test(symbol.name) || seen.has(symbol.name)) continue;
        // An error's fields, not a behaviour to configure: nothing has a default.
        if (symbol.name === 'LifelineErrorOptions') continue;
        seen.add(symbol.name);
        for (const property of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
          if (!(property.flags & ts.SymbolFlags.Optional)) continue;
          const doc = ts.displayPartsToString(property.getDocumentationComment(checker));
          const tags = property.getJsDocTags(checker).map((tag) => tag.name);
          if (!/\bdefault\b/i.test(doc) && !tags.includes('default')) undocumented.push(`${symbol.name}.${property.name}`);
        }
      }
    }
    expect([...seen].sort()).toEqual(expect.arrayContaining(['LifelineHandlerOptions', 'LifelineOptions', 'RedisTurnLogOptions', 'RetryOptions', 'ServeOptions']));
    expect(undocumented).toEqual([]);
  });
});

describe('package linters', () => {
  it('publint finds nothing', async () => {
    const result = await linters!.publint;
    expect(result.code, report(result)).toBe(0);
    expect(result.stdout).toContain('All good');
  });

  it('attw finds no problem for an ESM-only package', async () => {
    const result = await linters!.attw;
    expect(result.code, report(result)).toBe(0);
  });
});
