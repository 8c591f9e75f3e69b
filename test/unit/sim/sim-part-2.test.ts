/** Part 2 of the simulator's CI seeds (see sim.test.ts and seeds.ts). */
import { it } from 'vitest';
import { partRange, runRange } from './seeds.js';

const [from, to] = partRange(2);
it(`holds every invariant on seeds ${from}..${to}`, { timeout: 600_000 }, () => runRange(from, to));
