/** The soak's command line (see scripts/soak.mjs). */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { runSoak } from './soak.js';

const CHROMIUM = process.env['LIFELINE_CHROMIUM'] ?? (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined);

/** Runs the soak; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string', default: '1' },
      turns: { type: 'string', default: '20' },
      faults: { type: 'string', default: '100' },
      conversations: { type: 'string', default: '4' },
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
    ...(CHROMIUM ? { executablePath: CHROMIUM } : {}),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const result = await runSoak({ ...numbers, browser, log: (line) => console.log(line) });
    console.log(`\n${result.report}`);
    return result.passed ? 0 : 1;
  } finally {
    await browser.close();
  }
}
