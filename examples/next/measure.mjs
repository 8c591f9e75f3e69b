/**
 * The JavaScript a browser loads for the Next.js example's chat page and for its control
 * page (the same chat on the AI SDK's own transport, no Lifeline), from the build output:
 * every chunk the prerendered HTML names (script tags and the chunks its React Server
 * Components payload lists), each gzipped. Run after `next build examples/next`:
 * `node examples/next/measure.mjs`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const dist = fileURLToPath(new URL(process.env['NEXT_DIST_DIR'] ?? '.next', new URL('./', import.meta.url)));

const CHUNK = /\/_next\/static\/chunks\/[\w.-]+\.js/g;

/**
 * The chunks a prerendered page names, with their raw and gzipped bytes; not the `noModule`
 * polyfills, which a browser that runs modules never loads.
 */
function pageScripts(html) {
  const page = readFileSync(join(dist, 'server', 'app', html), 'utf8');
  const legacy = new Set((page.match(/<script[^>]*noModule[^>]*>/gi) ?? []).flatMap((tag) => tag.match(CHUNK) ?? []));
  const chunks = [...new Set(page.match(CHUNK) ?? [])].filter((chunk) => !legacy.has(chunk));
  return chunks.map((chunk) => {
    const bytes = readFileSync(join(dist, 'static', chunk.slice('/_next/static/'.length)));
    return { chunk, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
}

const kB = (bytes) => `${(bytes / 1000).toFixed(2)} kB`;
const sum = (scripts, key) => scripts.reduce((total, script) => total + script[key], 0);

if (!existsSync(join(dist, 'BUILD_ID'))) {
  console.error(`No build in ${dist}: run \`npx next build examples/next\` first.`);
  process.exit(1);
}
const lifeline = pageScripts('index.html');
const control = pageScripts('control.html');
const shared = new Set(control.map((script) => script.chunk));
const added = lifeline.filter((script) => !shared.has(script.chunk));
console.log(`chat page with Lifeline      ${kB(sum(lifeline, 'gzip'))} gzip (${kB(sum(lifeline, 'raw'))} raw, ${lifeline.length} chunks)`);
console.log(`control page without it      ${kB(sum(control, 'gzip'))} gzip (${kB(sum(control, 'raw'))} raw, ${control.length} chunks)`);
console.log(`difference                   ${kB(sum(lifeline, 'gzip') - sum(control, 'gzip'))} gzip (${kB(sum(added, 'gzip'))} in the ${added.length} chunks only the chat page loads)`);
