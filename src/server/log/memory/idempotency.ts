import type { IdempotencyRecord } from '../turn-log.js';

interface KeyEntry {
  record: IdempotencyRecord;
  /** When an `in_flight` record was written; one whose request died is dropped after retention. */
  writtenAtMs: number;
}

/** The memory log's idempotency ledger: principal → key → record. */
export class MemoryIdempotencyLedger {
  readonly #retentionMs: number;
  readonly #now: () => number;
  readonly #keys = new Map<string, Map<string, KeyEntry>>();

  constructor(retentionMs: number, now: () => number) {
    this.#retentionMs = retentionMs;
    this.#now = now;
  }

  get(principal: string, key: string): IdempotencyRecord | undefined {
    const found = this.#keys.get(principal)?.get(key);
    return found ? { ...found.record } : undefined;
  }

  putIfAbsent(principal: string, key: string, record: IdempotencyRecord): IdempotencyRecord | undefined {
    const map = this.#keysOf(principal);
    const found = map.get(key);
    if (found) return { ...found.record };
    map.set(key, { record: { ...record }, writtenAtMs: this.#now() });
    return undefined;
  }

  complete(principal: string, key: string, record: IdempotencyRecord): void {
    this.#keysOf(principal).set(key, { record: { ...record }, writtenAtMs: this.#now() });
  }

  delete(principal: string, key: string): void {
    const map = this.#keys.get(principal);
    map?.delete(key);
    if (map?.size === 0) this.#keys.delete(principal);
  }

  /**
   * Drops keys whose time is up. A done key lives exactly as long as its turn
   * (`isRetained`); an in_flight one whose request never finished (it crashed between
   * put and complete) lives one retention period.
   */
  sweep(isRetained: (turnId: string) => boolean): void {
    const at = this.#now();
    for (const [principal, map] of this.#keys) {
      for (const [key, { record, writtenAtMs }] of map) {
        const gone = record.state === 'done' ? !isRetained(record.turnId ?? '') : at - writtenAtMs >= this.#retentionMs;
        if (gone) map.delete(key);
      }
      if (map.size === 0) this.#keys.delete(principal);
    }
  }

  #keysOf(principal: string): Map<string, KeyEntry> {
    let map = this.#keys.get(principal);
    if (!map) this.#keys.set(principal, (map = new Map()));
    return map;
  }
}
