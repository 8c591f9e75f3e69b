// Types of scripts/size.mjs for the TypeScript benchmarks that import it.
export interface SizeRow {
  name: string;
  minified?: number;
  gzipped?: number;
  budget?: number;
  missing?: string;
}
export const KB: number;
export const BUDGETS: Record<string, number>;
export function measureBundleSizes(): Promise<SizeRow[]>;
export function formatKb(bytes: number): string;
export function sizeTable(rows: readonly SizeRow[]): string;
