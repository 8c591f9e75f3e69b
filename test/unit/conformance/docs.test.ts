/** docs/conformance.md lists every check the suite runs, and nothing it does not. */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { ALL_CHECKS } from '../../../src/conformance/checks/index.js';

it('docs/conformance.md has one table row per check', () => {
  const docs = readFileSync(new URL('../../../docs/conformance.md', import.meta.url), 'utf8');
  const rows = [...docs.matchAll(/^\| `(s\d+\.[a-z0-9-]+)`/gm)].map((match) => match[1]);
  expect(rows).toEqual(ALL_CHECKS.map((check) => check.id));
});
