/** The simulator's second half of the CI seeds (see sim.test.ts and seeds.ts). */
import { it } from 'vitest';
import { runRange, SEEDS } from './seeds.js';

it(`holds every invariant on seeds ${SEEDS / 2 + 1}..${SEEDS}`, { timeout: 600_000 }, () => runRange(SEEDS / 2 + 1, SEEDS));
