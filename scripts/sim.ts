/**
 * `npm run sim -- --seeds N [--from S] [--only clock,storage]` runs N seeded simulations
 * (test/sim/); `npm run sim -- --seed S` replays one and prints its whole trace. Exits 1 on
 * the first failure, printing the one command that replays it.
 */
import { report, runSeed } from '../test/sim/run.js';
import { FAULT_CLASSES, type FaultClass } from '../test/sim/steps.js';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const only = value('only')?.split(',').map((c) => {
  if (!FAULT_CLASSES.includes(c as FaultClass)) throw new Error(`unknown class ${c}; one of ${FAULT_CLASSES.join(', ')}`);
  return c as FaultClass;
});
const keepGoing = args.includes('--all');
const one = value('seed');
const started = performance.now();

if (one !== undefined) {
  const result = await runSeed(Number(one), { only });
  console.log(result.trace.join('\n'));
  console.log(result.ok ? `sim: seed ${one} ok (${(result.virtualMs / 1000).toFixed(1)} virtual s, peak ${result.peakTimersPerSecond} timers/s)` : report(result, only));
  process.exit(result.ok ? 0 : 1);
}
const from = Number(value('from') ?? 1);
const count = Number(value('seeds') ?? 200);
let failures = 0;
const kinds = new Map<string, number[]>();
for (let seed = from; seed < from + count; seed++) {
  const result = await runSeed(seed, { only });
  if (result.ok) continue;
  failures++;
  for (const v of new Set(result.violations.map((v) => v.kind))) kinds.set(v, [...(kinds.get(v) ?? []), seed]);
  if (!keepGoing) {
    console.log(report(result, only));
    process.exit(1);
  }
  console.log(report(result, only, 0).split('\n').slice(0, 2).join('\n'));
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
for (const [kind, seeds] of kinds) console.log(`  ${kind}: ${seeds.length} seeds (${seeds.slice(0, 12).join(', ')}${seeds.length > 12 ? ', …' : ''})`);
console.log(`sim: ${count - failures} of ${count} seeds ok (${from}..${from + count - 1}${only ? `, only ${only.join(',')}` : ''}) in ${seconds} s`);
process.exit(failures ? 1 : 0);
