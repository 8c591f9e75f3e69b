import type { IndexEntry, SortedSets } from '../operator-index.js';

/** One set: entries sorted by score (ties by insertion), and each id's score to find it again. */
interface MemorySet {
  entries: IndexEntry[];
  scores: Map<string, number>;
}

/** First index whose score is greater than `score` (entries scored `score` come before it). */
function upperBound(entries: readonly IndexEntry[], score: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((entries[mid] as IndexEntry).score <= score) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** First index whose score is at least `score`. */
function lowerBound(entries: readonly IndexEntry[], score: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((entries[mid] as IndexEntry).score < score) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * The memory log's {@link SortedSets}. Turns mostly enter a set in time order, so an add
 * lands at the end of its array; a range is two binary searches and a walk of the entries
 * it returns, whatever the set holds.
 */
export class MemorySortedSets implements SortedSets {
  readonly #sets = new Map<string, MemorySet>();

  async add(sets: readonly string[], id: string, score: number): Promise<void> {
    for (const name of sets) {
      let set = this.#sets.get(name);
      if (!set) this.#sets.set(name, (set = { entries: [], scores: new Map() }));
      if (set.scores.get(id) === score) continue;
      this.#delete(set, id);
      set.entries.splice(upperBound(set.entries, score), 0, { id, score });
      set.scores.set(id, score);
    }
  }

  async remove(sets: readonly string[], id: string): Promise<void> {
    for (const name of sets) {
      const set = this.#sets.get(name);
      if (!set) continue;
      this.#delete(set, id);
      if (set.entries.length === 0) this.#sets.delete(name);
    }
  }

  async range(name: string, min: number, max: number, offset: number, count: number): Promise<IndexEntry[]> {
    const set = this.#sets.get(name);
    if (!set) return [];
    const low = lowerBound(set.entries, min);
    const found: IndexEntry[] = [];
    for (let i = upperBound(set.entries, max) - 1 - offset; i >= low && found.length < count; i--) found.push({ ...(set.entries[i] as IndexEntry) });
    return found;
  }

  async trim(name: string, before: number): Promise<void> {
    const set = this.#sets.get(name);
    if (!set) return;
    const cut = lowerBound(set.entries, before);
    for (const entry of set.entries.splice(0, cut)) set.scores.delete(entry.id);
    if (set.entries.length === 0) this.#sets.delete(name);
  }

  #delete(set: MemorySet, id: string): void {
    const score = set.scores.get(id);
    if (score === undefined) return;
    set.scores.delete(id);
    for (let i = lowerBound(set.entries, score); i < set.entries.length; i++) {
      if ((set.entries[i] as IndexEntry).id === id) {
        set.entries.splice(i, 1);
        return;
      }
    }
  }
}
