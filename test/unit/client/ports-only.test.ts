/**
 * The client reaches the platform only through src/ports/ (issue 23): this test type-checks
 * `src/` and resolves every identifier to its declaration, so a comment, a string, a
 * property or a local of the same name is never a hit, and a global read is, however it is
 * spelled (`setTimeout`, `globalThis.setTimeout`, `window.fetch`, `Date.now`, `new Date()`).
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Not client code: the reference server, the conformance suite and lifeline-chat-admin run on Node, not in the page. */
const OUTSIDE = ['src/server/', 'src/conformance/', 'src/admin/', 'src/ports/'];

/** Globals only a port may read. */
const BANNED = new Set([
  'performance',
  'setTimeout',
  'setInterval',
  'clearTimeout',
  'clearInterval',
  'fetch',
  'indexedDB',
  'navigator',
  'localStorage',
  'sessionStorage',
  'BroadcastChannel',
  'document',
  'window',
  'requestAnimationFrame',
  'addEventListener',
  'removeEventListener',
]);
/** Members of allowed globals only a port may read. */
const BANNED_MEMBERS: Record<string, string[]> = { Date: ['now'], Math: ['random'], crypto: ['getRandomValues', 'randomUUID'], AbortSignal: ['timeout'] };

/** A made-up module the check must flag exactly as the test below lists (it shares the program, so the same resolution decides). */
const PROBE = join(root, 'src/__ports-probe__.ts');
const PROBE_TEXT = `
  // setTimeout(() => {}, 1) in a comment
  const text = 'fetch navigator Date.now()';
  const deps = { fetch: 1, now: 2 };
  deps.fetch;
  const fetch = (): void => {};
  fetch();
  let timer: ReturnType<typeof setTimeout> | undefined;
  timer = setTimeout(() => {}, 1);
  globalThis.fetch('/');
  Date.now();
  new Date();
  new Date(0);
  Math.random();
  crypto.getRandomValues(new Uint8Array(1));
  window.document;
  export { text, timer };
`;

/** One program over the client's sources (and the probe) with the build's compiler options. */
function program(): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const options = { ...config.options, noEmit: true };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === PROBE ? ts.createSourceFile(name, PROBE_TEXT, language, true) : getSourceFile(name, language, ...rest));
  return ts.createProgram({ rootNames: [...config.fileNames, PROBE], options, host });
}

/** `node` resolves to a symbol the platform alone declares (TypeScript's lib files, @types/node). */
function isPlatform(checker: ts.TypeChecker, prog: ts.Program, node: ts.Node): boolean {
  const symbol = ts.isShorthandPropertyAssignment(node.parent) ? checker.getShorthandAssignmentValueSymbol(node.parent) : checker.getSymbolAtLocation(node);
  const declarations = symbol?.declarations ?? [];
  return (
    declarations.length > 0 &&
    declarations.every((declaration) => {
      const file = declaration.getSourceFile();
      return prog.isSourceFileDefaultLibrary(file) || /[\\/]node_modules[\\/]@types[\\/]/.test(file.fileName);
    })
  );
}

/** In a type position (`typeof fetch` as a type, `ReturnType<typeof setTimeout>`): no runtime read. */
function inType(node: ts.Node): boolean {
  for (let at: ts.Node | undefined = node.parent; at; at = at.parent) if (ts.isTypeNode(at)) return true;
  return false;
}

/** Every platform read of the client's modules outside the ports (or of the probe alone), as `file:line name`. */
function platformReads(prog: ts.Program, probe = false): string[] {
  const checker = prog.getTypeChecker();
  const found: string[] = [];
  for (const file of prog.getSourceFiles()) {
    const path = relative(root, file.fileName).replaceAll('\\', '/');
    if ((file.fileName === PROBE) !== probe || !path.startsWith('src/') || OUTSIDE.some((prefix) => path.startsWith(prefix))) continue;
    const hit = (node: ts.Node, name: string): void => void found.push(`${path}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${name}`);
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node) && BANNED.has(node.text) && !inType(node)) {
        const parent = node.parent;
        // A member or declaration name (`deps.fetch`, `{ fetch: f }`, `const fetch`) is no read of the global…
        const isName = ('name' in parent && parent.name === node && !ts.isShorthandPropertyAssignment(parent)) || (ts.isQualifiedName(parent) && parent.right === node);
        // …unless it is a member of the global object: `globalThis.fetch`, `window.document`.
        const viaGlobal = ts.isPropertyAccessExpression(parent) && parent.name === node && ts.isIdentifier(parent.expression) && ['globalThis', 'window', 'self'].includes(parent.expression.text);
        if (viaGlobal || (!isName && isPlatform(checker, prog, node))) hit(node, node.text);
      }
      if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && BANNED_MEMBERS[node.expression.text]?.includes(node.name.text)) {
        if (isPlatform(checker, prog, node.expression)) hit(node, `${node.expression.text}.${node.name.text}`);
      }
      // `new Date()` and `Date()` read the wall clock too.
      if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'Date' && !node.arguments?.length) {
        if (isPlatform(checker, prog, node.expression)) hit(node, 'new Date()');
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

describe('the client touches the platform only through src/ports/', () => {
  const prog = program();

  it('no module outside src/ports/ (client side) reads a platform global', () => {
    expect(platformReads(prog)).toEqual([]);
  });

  it('the check sees reads however spelled, and not comments, strings, properties, locals or type positions', () => {
    expect(platformReads(prog, true).map((hit) => hit.split(' ').slice(1).join(' '))).toEqual([
      'setTimeout',
      'fetch',
      'Date.now',
      'new Date()',
      'Math.random',
      'crypto.getRandomValues',
      'window',
      'document',
    ]);
  });
});
