/** How results read: one line per check for people, one JSON document for machines. */
import type { CheckResult } from './check.js';
import type { ConformanceReport } from './run.js';

const LABEL = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' } as const;

/** `PASS s1.accepted  <title> (<reason>)`. */
export function formatResult(result: CheckResult): string {
  return `${LABEL[result.status]} ${result.id}  ${result.title} (${result.reason})`;
}

/** `N passed, N failed, N skipped`. */
export function formatSummary(report: Pick<ConformanceReport, 'passed' | 'failed' | 'skipped'>): string {
  return `${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`;
}

/** The whole report as JSON (stable field names: protocol, baseUrl, results, passed, failed, skipped, ok). */
export function formatJson(report: ConformanceReport): string {
  return JSON.stringify(report, null, 2);
}
