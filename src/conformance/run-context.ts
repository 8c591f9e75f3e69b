/**
 * What a check is and what it runs with: the run's context (settings, ids, the error
 * answers so far) and the turns checks share, each made once, on first use, so `--only`
 * runs only what it needs.
 */
import { createBaseContext, type BaseContext, type ConformanceOptions } from './context.js';
import { createTurnFixtures, type TurnFixtures } from './fixtures.js';

/** What checks get. */
export interface RunContext extends BaseContext {
  readonly turns: TurnFixtures;
}

/** One check of the suite. */
export interface Check {
  /** Stable id, `<section>.<name>`, e.g. `s2.seq-contiguous`. */
  id: string;
  /** One line: what a conforming server does. */
  title: string;
  /** Where docs/protocol.md says so, e.g. `§2 "seq = 1, 2, 3 … with no gaps"`. */
  rule: string;
  /** Resolves with a note on pass; throws CheckFailure or CheckSkip (check.ts). */
  run(context: RunContext): Promise<string>;
}

/** Builds the context of one run. */
export function createRunContext(options: ConformanceOptions): RunContext {
  const base = createBaseContext(options);
  return { ...base, turns: createTurnFixtures(base) };
}
