/**
 * Where delivery receipts wait to land (docs/protocol.md section 10): in memory, and in the
 * page's `localStorage` under one key per turn (`lifeline-receipt:<namespace>:<turnId>`), so
 * tabs never overwrite each other's and the next page sends what this one left.
 */
import type { KeyValueStorage } from '../ports/storage.js';
import { createPageRecords } from '../storage/page-records.js';

const PREFIX = 'lifeline-receipt:';

/** One receipt waiting to land, as stored (key `lifeline-receipt:<namespace>:<turnId>`). */
export interface ReceiptRecord {
  turnId: string;
  seq: number;
  textSha256: string;
  createdAt: number;
  attempts: number;
}

function isReceipt(value: unknown): value is ReceiptRecord {
  const record = value as Partial<ReceiptRecord> | undefined;
  return (
    typeof record?.turnId === 'string' &&
    Number.isSafeInteger(record.seq) &&
    typeof record.textSha256 === 'string' &&
    typeof record.createdAt === 'number' &&
    typeof record.attempts === 'number'
  );
}

/** The receipts as stored: in memory, and in `storage` when the page may use it (best effort, storage/page-records.ts). */
export function createReceiptStore(storage: KeyValueStorage | undefined, namespace: string) {
  const stored = createPageRecords(storage, `${PREFIX}${namespace}:`);
  const memory = new Map<string, ReceiptRecord>();
  const remove = (turnId: string): void => {
    memory.delete(turnId);
    stored.remove(turnId);
  };
  return {
    /** Turn ids of every receipt `storage` holds for this namespace. */
    storedIds: stored.ids,
    remove,
    read(turnId: string): ReceiptRecord | undefined {
      const record = memory.get(turnId) ?? stored.read(turnId);
      return isReceipt(record) ? record : undefined;
    },
    write(record: ReceiptRecord): void {
      memory.set(record.turnId, record);
      stored.write(record.turnId, record);
    },
    clear(): void {
      for (const turnId of new Set([...memory.keys(), ...stored.ids()])) remove(turnId);
    },
  };
}

export type ReceiptStore = ReturnType<typeof createReceiptStore>;
