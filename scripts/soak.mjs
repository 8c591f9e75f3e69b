#!/usr/bin/env node
// `npm run soak -- --seed N --turns T --faults F [--conversations C]`: the seeded chaos
// soak (bench/soak/, TypeScript run through tsx) against the BUILT package in headless
// Chromium. Prints the table and `SOAK PASS` / `SOAK FAIL`; exits 1 on failure.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/soak/cli.ts');
try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  console.error(`soak: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  console.error('SOAK FAIL');
  process.exitCode = 1;
}
