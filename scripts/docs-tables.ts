/** `npm run docs:tables`: writes the machines' generated tables into docs/architecture.md (see machine-tables.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderInto } from './machine-tables.js';

const path = fileURLToPath(new URL('../docs/architecture.md', import.meta.url));
const before = readFileSync(path, 'utf8');
const after = renderInto(before);
writeFileSync(path, after);
console.log(after === before ? 'docs/architecture.md: tables already current' : 'docs/architecture.md: tables rewritten');
