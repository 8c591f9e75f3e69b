/** The soak's command line (see scripts/soak.mjs). */
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { CHROMIUM_FLAGS, chromiumExecutable } from '../../test/chromium.js';
import { runSoak, type SoakResult } from './soak.js';

/** Runs the soak; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string', default: '1' },
      turns: { type: 'string', default: '20' },
      faults: { type: 'string', default: '100' },
      conversations: { type: 'string', default: '4' },
      /** Also write docs/reliability.md (command, machine, date, the table). */
      record: { type: 'boolean', default: false },
    },
  });
  const numbers = { seed: Number(values.seed), turns: Number(values.turns), faults: Number(values.faults), conversations: Number(values.conversations) };
  for (const [name, value] of Object.entries(numbers)) {
    if (!Number.isInteger(value) || value < (name === 'faults' ? 0 : 1)) {
      console.error(`soak: --${name} must be a positive integer`);
      return 2;
    }
  }
  const browser = await chromium.launch({
    headless: true,
    ...(chromiumExecutable ? { executablePath: chromiumExecutable } : {}),
    args: [...CHROMIUM_FLAGS],
  });
  try {
    const result = await runSoak({ ...numbers, browser, log: (line) => console.log(line) });
    console.log(`\n${result.report}`);
    if (values.record) {
      writeFileSync(new URL('../../docs/reliability.md', import.meta.url), reliabilityDoc(argv, result, browser.version()));
      console.log('\nwrote docs/reliability.md');
    }
    return result.passed ? 0 : 1;
  } finally {
    await browser.close();
  }
}

function reliabilityDoc(argv: string[], result: SoakResult, chromiumVersion: string): string {
  const command = `npm run soak -- ${argv.filter((arg) => arg !== '--record').join(' ')}`;
  return [
    '# Reliability: the seeded chaos soak',
    '',
    'The real client (the built package, in headless Chromium) follows turns from the reference server',
    'through the seeded fault proxy while the soak injects every fault below; after each run every turn',
    'is checked against the oracles of docs/faults.md: **T=** (the text on the page and in IndexedDB is',
    "byte-identical to the server's replay, SHA-256), **J0** over every page's applied `(turnId, seq)`",
    '(lost = duplicated = out of order = unexpected = 0), **X1** over the server\'s idempotency ledger',
    '(each submission and each key produced exactly one turn; the outbox ends empty), no unhandled',
    'rejection, no console error. Same seed, same fault schedule (its hash is printed); when a fault',
    'fires depends on timing. A fault counts as injected only once it acted (a cut after its byte',
    'offset, a stall that held, a 503 answered…); one whose chance never came is reported as scheduled only.',
    '',
    `- command: \`${command}\` (bench/soak/, scripts/soak.mjs)`,
    `- date: ${new Date().toISOString()}`,
    `- machine: ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, Chromium ${chromiumVersion}`,
    '- a smaller soak (seed 1, 6 turns, 30 faults) runs in `npm test` (test/browser/soak/soak-small.spec.ts)',
    '',
    '## Result',
    '',
    result.report,
    '',
  ].join('\n');
}
