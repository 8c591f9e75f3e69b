/** What the persistence tests share: a cleanup list run after each test and stores that record their writes. */
import { vi } from 'vitest';
import type { TurnEvent } from '../../../../src/protocol/schemas.js';
import { createMemoryStore, type MemoryStore } from '../../../../src/storage/memory-store.js';
import { createPersistence } from '../../../../src/storage/persistence.js';
import type { Store, TurnWrite } from '../../../../src/storage/store.js';
import type { Diagnostic } from '../../../../src/types.js';

/** Steps run after each test, last added first: servers closed, clients disposed, globals restored. */
export const cleanup: (() => Promise<void> | void)[] = [];

/** For `afterEach`: real timers again, then every cleanup step. */
export async function runCleanups(): Promise<void> {
  vi.useRealTimers();
  for (const step of cleanup.splice(0).reverse()) await step();
}

/** One `write` call: chunks (how many), a fold, or bare rows. */
export type Call = { method: 'chunks' | 'fold' | 'rows'; items: number };

/** What a write call does: a fold (a row with text), chunks, or bare rows. */
export const writeKind = (items: readonly TurnWrite[]): Call['method'] =>
  items.some(({ record }) => record.text !== undefined) ? 'fold' : items.some(({ chunk }) => chunk) ? 'chunks' : 'rows';

/** A memory store that records its write calls. */
export function recordingStore(): { store: Store; inner: MemoryStore; calls: Call[] } {
  const inner = createMemoryStore();
  const calls: Call[] = [];
  const store: Store = {
    ...inner,
    kind: 'recording',
    write: (items) => {
      calls.push({ method: writeKind(items), items: items.length });
      return inner.write(items);
    },
  };
  return { store, inner, calls };
}

/** A plain text delta. */
export function delta(turnId: string, seq: number, text: string): TurnEvent {
  return { turnId, seq, type: 'delta', text };
}

/** A persistence over `store` tracking two streaming turns, turn_a and turn_b, of conv_1. */
export function persistenceOver(store: Store, diagnostics: Diagnostic[] = []) {
  const persistence = createPersistence({
    store,
    flushMs: 16,
    flushEvents: 256,
    retentionMs: 1000,
    now: Date.now,
    emit: (diagnostic) => diagnostics.push(diagnostic),
  });
  for (const id of ['turn_a', 'turn_b']) persistence.track(id, () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 1 }));
  return persistence;
}
