#!/usr/bin/env node
// `npm run soak -- --seed N --turns T --faults F [--conversations C]`: the seeded chaos
// soak (bench/soak/, TypeScript run through tsx) against the BUILT package in headless
// Chromium. Prints the table and `SOAK PASS` / `SOAK FAIL`; exits 1 on failure.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/soak/cli.ts');
process.exitCode = await main(process.argv.slice(2));
