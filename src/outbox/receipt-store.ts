/**
 * Where delivery receipts wait to land (docs/protocol.md section 10): in memory, and in the
 * page's `localStorage` under one key per turn (`lifeline-receipt:<namespace>:<turnId>`), so
 * tabs never overwrite each other's and the next page sends what this one left.
 */
import type { KeyValueStorage } from '../ports/storage.js';

const PREFIX = 'lifeline-receipt:';

/** One receipt waiting to land, as stored (key `lifeline-receipt:<namespace>:<turnId>`). */
export interface ReceiptRecord {
  turnId: string;
  seq: number;
  textSha256: string;
  createdAt: number;
  attempts: number;
}

function parse(value: string | null): ReceiptRecord | undefined {
  if (value === null) return undefined;
  try {
    const record = JSON.parse(value) as Partial<ReceiptRecord>;
    const ok =
      typeof record.turnId === 'string' &&
      Number.isSafeInteger(record.seq) &&
      typeof record.textSha256 === 'string' &&
      typeof record.createdAt === 'number' &&
      typeof record.attempts === 'number';
    return ok ? (record as ReceiptRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** The receipts as stored: in memory, and in `storage` when the page may use it (best effort). */
export function createReceiptStore(storage: KeyValueStorage | undefined, namespace: string) {
  const prefix = `${PREFIX}${namespace}:`;
  const memory = new Map<string, ReceiptRecord>();
  /** Turn ids of every receipt `storage` holds for this namespace. */
  const storedIds = (): string[] =>
    safely(() => {
      const ids: string[] = [];
      for (let i = 0; storage && i < storage.length; i++) {
        const key = storage.key(i);
        if (key?.startsWith(prefix)) ids.push(key.slice(prefix.length));
      }
      return ids;
    }, []);
  const remove = (turnId: string): void => {
    memory.delete(turnId);
    safely(() => storage?.removeItem(prefix + turnId), undefined);
  };
  return {
    storedIds,
    remove,
    read: (turnId: string): ReceiptRecord | undefined => memory.get(turnId) ?? parse(safely(() => storage?.getItem(prefix + turnId) ?? null, null)),
    write(record: ReceiptRecord): void {
      memory.set(record.turnId, record);
      safely(() => storage?.setItem(prefix + record.turnId, JSON.stringify(record)), undefined);
    },
    clear(): void {
      for (const turnId of new Set([...memory.keys(), ...storedIds()])) remove(turnId);
    },
  };
}

export type ReceiptStore = ReturnType<typeof createReceiptStore>;

/** Storage that is full or refused leaves the receipt in memory: best effort, like the outbox journal. */
function safely<T>(step: () => T, fallback: T): T {
  try {
    return step();
  } catch {
    return fallback;
  }
}
