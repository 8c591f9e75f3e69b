/** What the shared-store suites share: a fresh key prefix per test, and cleanups run after each. */

let prefixes = 0;

/** Closes servers and stores, last opened first; run after each test. */
export const cleanups: (() => Promise<void>)[] = [];

export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** A key prefix no other test uses: the shared store's name for one test. */
export function newPrefix(): string {
  prefixes++;
  return `multi${prefixes}:`;
}
