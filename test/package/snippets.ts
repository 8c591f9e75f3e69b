/**
 * Code blocks of the Markdown documentation, so the package tests can type-check every
 * TypeScript example against the installed package.
 *
 * The convention, for a writer:
 * - Every fenced block names its language. `ts` and `tsx` blocks are type-checked; the
 *   other languages in {@link UNCHECKED_LANGUAGES} are prose (shell, HTTP, wire text).
 * - A block that uses names it does not define (the app's own `getToken`, an `agent`
 *   from the block before) gets a prelude: an HTML comment right above the fence,
 *   invisible on GitHub, whose body is TypeScript put before the block:
 *
 *       <!-- prelude: declare function getToken(): Promise<string>; -->
 *       ```ts
 */
import { readFileSync } from 'node:fs';

export const CHECKED_LANGUAGES = ['ts', 'tsx'] as const;
export const UNCHECKED_LANGUAGES = ['sh', 'text', 'http', 'json', 'python'] as const;

export interface Snippet {
  /** The document's path, as given. */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  prelude: string;
  code: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const PRELUDE = /^\s*<!--\s*prelude:([\s\S]*)-->\s*$/;

/** The prelude comment ending right above line `fence` (blank lines allowed between), or ''. */
function preludeAbove(lines: readonly string[], fence: number): string {
  let end = fence - 1;
  while (end >= 0 && (lines[end] ?? '').trim() === '') end--;
  if (end < 0 || !(lines[end] ?? '').trimEnd().endsWith('-->')) return '';
  let start = end;
  while (start >= 0 && !(lines[start] ?? '').includes('<!--')) start--;
  return PRELUDE.exec(lines.slice(start, end + 1).join('\n'))?.[1]?.trim() ?? '';
}

/** Every fenced block of one Markdown file, in order. */
export function extractSnippets(doc: string, path: string = doc): Snippet[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (!open) continue;
    const [, indent = '', fence = '', info = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j] ?? '';
      if (line.trim().startsWith(fence) && line.trim().slice(fence.length).trim() === '') break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line);
    }
    snippets.push({
      doc,
      line: i + 1,
      lang: info.trim().split(/\s+/)[0] ?? '',
      prelude: preludeAbove(lines, i),
      code: body.join('\n'),
    });
    i = j;
  }
  return snippets;
}

/** The file a checked snippet becomes: where it came from, its prelude, its code. */
export function snippetSource(snippet: Snippet): string {
  return [`// ${snippet.doc}, the block at line ${snippet.line}`, snippet.prelude, snippet.code, 'export {};', ''].join('\n');
}

/** A file name that says where the block is, e.g. `README.md-57.tsx`. */
export function snippetFileName(snippet: Snippet): string {
  return `${snippet.doc.replaceAll('/', '_')}-${snippet.line}.${snippet.lang === 'tsx' ? 'tsx' : 'ts'}`;
}
