/**
 * How a conformance check reports (what a check is: run-context.ts): a check throws
 * {@link CheckFailure} to fail with a reason and {@link CheckSkip} to skip with one;
 * returning a string passes with that note. Anything else thrown (a timeout, a refused connection) is a
 * failure too: a server that does not answer does not conform.
 */
/** Protocol sections a check belongs to; `s0` is the page's preamble (error bodies, JSON). */
export type SectionId = 's0' | 's1' | 's2' | 's3' | 's4' | 's5' | 's9' | 's10' | 's11';

export type CheckStatus = 'pass' | 'fail' | 'skip';

/** The outcome of one check. */
export interface CheckResult {
  id: string;
  section: SectionId;
  title: string;
  rule: string;
  status: CheckStatus;
  /** Why it failed or was skipped, or what a pass covered. */
  reason: string;
  durationMs: number;
}

/** Thrown by a check that found the server breaking the protocol. */
export class CheckFailure extends Error {
  override name = 'CheckFailure';
}

/** Thrown by a check that cannot run against this server (e.g. no conformance agent). */
export class CheckSkip extends Error {
  override name = 'CheckSkip';
}

/** Fails the running check with `reason` unless `condition` holds. */
export function expect(condition: unknown, reason: string): asserts condition {
  if (!condition) throw new CheckFailure(reason);
}

/** Fails unless `actual` and `expected` are the same JSON value. */
export function expectJsonEqual(actual: unknown, expected: unknown, what: string): void {
  const a = canonical(actual);
  const b = canonical(expected);
  if (a === b) return;
  if (Array.isArray(actual) && Array.isArray(expected)) {
    // Name the first item that differs: a whole turn in one line is unreadable.
    const length = Math.max(actual.length, expected.length);
    for (let i = 0; i < length; i++) {
      const left = i < actual.length ? canonical(actual[i]) : undefined;
      const right = i < expected.length ? canonical(expected[i]) : undefined;
      if (left !== right) {
        throw new CheckFailure(`${what}: ${actual.length} items (expected ${expected.length}); item ${i} is ${clip(left)}, expected ${clip(right)}`);
      }
    }
  }
  throw new CheckFailure(`${what}: expected ${clip(b)}, got ${clip(a)}`);
}

/** JSON with object keys sorted, so member order never makes two values differ. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(inner).sort()) sorted[key] = (inner as Record<string, unknown>)[key];
    return sorted;
  });
}

/** A value shortened for a one-line report. */
export function clip(text: string | undefined, max = 160): string {
  if (text === undefined) return 'undefined';
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** The section of a check id (`s2.seq-contiguous` → `s2`). */
export function sectionOf(id: string): SectionId {
  return id.slice(0, id.indexOf('.')) as SectionId;
}
