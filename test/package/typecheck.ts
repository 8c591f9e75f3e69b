/**
 * Type-checks scratch projects in this process with the repository's TypeScript. Programs
 * share parsed declaration files (lib, @types, the package's own), which is most of the
 * work of a check: three consumer projects cost little more than one.
 */
import { join, relative } from 'node:path';
import ts from 'typescript';

export type Diagnostics = string[];

/** Declaration files parsed once for every program (keyed by what could change them). */
const parsed = new Map<string, ts.SourceFile>();

function hostFor(options: ts.CompilerOptions): ts.CompilerHost {
  // A parsed and bound file is only shared between programs whose settings cannot change it.
  const settings = JSON.stringify([options.target, options.module, options.jsx, options.strict]);
  const host = ts.createCompilerHost(options, true);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.endsWith('.d.ts')) return read(fileName, languageVersion, onError, shouldCreate);
    const format = typeof languageVersion === 'object' ? languageVersion.impliedNodeFormat : undefined;
    const key = `${fileName}|${format}|${settings}`;
    let file = parsed.get(key);
    if (!file) {
      file = read(fileName, languageVersion, onError, shouldCreate);
      if (file) parsed.set(key, file);
    }
    return file;
  };
  return host;
}

/** A program over `files` (relative to `dir`) with options spelled as in a tsconfig. */
export function createProgram(dir: string, compilerOptions: Record<string, unknown>, files: readonly string[]): ts.Program {
  const { options, errors } = ts.convertCompilerOptionsFromJson(compilerOptions, dir);
  if (errors.length > 0) throw new Error(ts.flattenDiagnosticMessageText(errors[0]?.messageText, '\n'));
  return ts.createProgram({ rootNames: files.map((file) => join(dir, file)), options: { ...options, noEmit: true }, host: hostFor(options) });
}

/**
 * Checks `files` (paths relative to `dir`) with `compilerOptions` as a tsconfig would
 * spell them, and the package's own declarations under those settings (as with
 * `skipLibCheck: false`; other libraries' declarations are not checked, they are not ours).
 * Returns every diagnostic as `file(line,col): TSxxxx message`, paths relative to `dir`.
 */
export function typeCheck(dir: string, compilerOptions: Record<string, unknown>, files: readonly string[]): Diagnostics {
  const program = createProgram(dir, { ...compilerOptions, skipLibCheck: false }, files);
  const roots = program.getRootFileNames();
  const ours = (file: ts.SourceFile) => roots.includes(file.fileName) || file.fileName.includes('/node_modules/lifeline-chat/');
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program.getSourceFiles().filter(ours).flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
  ];
  return diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!diagnostic.file || diagnostic.start === undefined) return `TS${diagnostic.code}: ${message}`;
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    return `${relative(dir, diagnostic.file.fileName)}(${line + 1},${character + 1}): TS${diagnostic.code} ${message}`;
  });
}
