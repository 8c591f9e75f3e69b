/** Small statistics helpers for benchmark figures. */

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** Linear-interpolated quantile, `q` in [0, 1]; NaN for no values. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/** The run whose `key` is the median of an odd number of runs (the middle one). */
export function medianRun<T>(runs: readonly T[], key: (run: T) => number): T {
  const sorted = [...runs].sort((a, b) => key(a) - key(b));
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  if (middle === undefined) throw new RangeError('no runs');
  return middle;
}

/** `123 456` with thin grouping for tables. */
export function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US').replaceAll(',', ' ') : 'n/a';
}

export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}
