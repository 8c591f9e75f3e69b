/** Runs the suite: picks the checks, runs them one by one, and tallies the results. */
import { LifelineError } from '../errors.js';
import { CheckFailure, CheckSkip, sectionOf, type CheckResult, type CheckStatus } from './check.js';
import { ALL_CHECKS } from './checks/index.js';
import type { ConformanceOptions } from './context.js';
import { createRunContext, type Check, type RunContext } from './run-context.js';

/** What {@link runConformance} resolves with. */
export interface ConformanceReport {
  /** The protocol version the suite holds the server to. */
  protocol: '1.2';
  baseUrl: string;
  results: CheckResult[];
  passed: number;
  failed: number;
  skipped: number;
  /** True when no check failed. */
  ok: boolean;
}

/** The checks `only` selects (sections like `s2` or ids like `s2.seq-contiguous`); every check without it. */
export function selectChecks(only: readonly string[] | undefined): readonly Check[] {
  if (only === undefined || only.length === 0) return ALL_CHECKS;
  for (const wanted of only) {
    if (!ALL_CHECKS.some((check) => check.id === wanted || sectionOf(check.id) === wanted)) {
      throw new LifelineError('invalid_argument', `--only ${JSON.stringify(wanted)} names no section (s0–s5, s9, s10, s11) and no check id.`);
    }
  }
  return ALL_CHECKS.filter((check) => only.includes(check.id) || only.includes(sectionOf(check.id)));
}

function checkBaseUrl(baseUrl: string): void {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new LifelineError('invalid_argument', `The base URL ${JSON.stringify(baseUrl)} is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new LifelineError('invalid_argument', `The base URL must be http or https, not ${url.protocol}`);
  if (url.search !== '' || url.hash !== '') throw new LifelineError('invalid_argument', 'The base URL may not have a query or a fragment.');
}

async function runOne(check: Check, context: RunContext): Promise<CheckResult> {
  const started = performance.now();
  let status: CheckStatus;
  let reason: string;
  try {
    reason = await check.run(context);
    status = 'pass';
  } catch (cause) {
    status = cause instanceof CheckSkip ? 'skip' : 'fail';
    reason = cause instanceof CheckFailure || cause instanceof CheckSkip ? cause.message : `unexpected error: ${String((cause as Error)?.stack ?? cause)}`;
  }
  const durationMs = Math.round(performance.now() - started);
  return { id: check.id, section: sectionOf(check.id), title: check.title, rule: check.rule, status, reason, durationMs };
}

/**
 * Runs the Lifeline protocol 1.1 conformance suite against the server at
 * `options.baseUrl`, over HTTP only. Checks that need the conformance agent
 * (docs/conformance.md) are skipped, with the reason, when the server does not run it.
 * Throws `LifelineError` `invalid_argument` for a bad base URL or `only`; a server
 * that breaks the protocol never throws, it fails checks.
 *
 * @example
 * const report = await runConformance({ baseUrl: 'http://127.0.0.1:8787/api', only: ['s2'] });
 * if (!report.ok) process.exitCode = 1;
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  checkBaseUrl(options.baseUrl);
  const checks = selectChecks(options.only);
  const context = createRunContext(options);
  const results: CheckResult[] = [];
  for (const check of checks) {
    const result = await runOne(check, context);
    results.push(result);
    options.onResult?.(result);
  }
  const count = (status: CheckStatus): number => results.filter((result) => result.status === status).length;
  const failed = count('fail');
  return { protocol: '1.2', baseUrl: options.baseUrl, results, passed: count('pass'), failed, skipped: count('skip'), ok: failed === 0 };
}
