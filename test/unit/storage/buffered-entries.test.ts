/**
 * The write buffer keeps a plain text delta as its text alone until it is written
 * (storage/write-buffer.ts, `Entries`): what it writes must be exactly what was appended,
 * event for event, field for field and in the same key order, however the appends mix
 * plain deltas with other events, gaps and other turns, and wherever the capped writes
 * and an ended turn's rest cut the buffer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LoggedEvent } from '../../../src/protocol/schemas.js';
import { createMemoryStore } from '../../../src/storage/memory-store.js';
import { createPersistence } from '../../../src/storage/persistence.js';
import type { Store } from '../../../src/storage/store.js';

const TURNS = ['turn_a', 'turn_b'] as const;

/** One appended event's shape besides turnId and seq; `other` appends it under the other turn's id. */
type Kind = 'plain' | 'part-id' | 'metadata' | 'part' | 'unknown' | 'empty' | 'other';

function eventOf(kind: Kind, turnId: string, seq: number, text: string): LoggedEvent {
  switch (kind) {
    case 'plain':
      return { turnId, seq, type: 'delta', text };
    case 'empty':
      return { turnId, seq, type: 'delta', text: '' };
    case 'part-id':
      return { turnId, seq, type: 'delta', text, partId: 'p1' };
    case 'metadata':
      return { turnId, seq, type: 'delta', text, providerMetadata: { model: { id: text } } };
    case 'part':
      return { turnId, seq, type: 'part', part: { type: 'reasoning', text } };
    case 'unknown':
      return { turnId, seq, type: 'x-future', text };
    case 'other':
      return { turnId: turnId === 'turn_a' ? 'turn_b' : 'turn_a', seq, type: 'delta', text };
  }
}

const step = fc.record({
  turn: fc.constantFrom(...TURNS),
  kind: fc.constantFrom<Kind>('plain', 'plain', 'plain', 'plain', 'part-id', 'metadata', 'part', 'unknown', 'empty', 'other'),
  // Mostly the next seq; sometimes a hole or a step back (the buffer must not assume order).
  skip: fc.constantFrom(1, 1, 1, 1, 1, 1, 2, 5, 0, -3),
  text: fc.string({ maxLength: 4 }),
});

/** A store that keeps a deep copy of every chunk it is asked to write, in order. */
function recordingStore(): { store: Store; written: Map<string, LoggedEvent[]> } {
  const inner = createMemoryStore();
  const written = new Map<string, LoggedEvent[]>(TURNS.map((id) => [id, []]));
  const store: Store = {
    ...inner,
    write: (items) => {
      for (const { chunk } of items) if (chunk) written.get(chunk.turnId)!.push(...structuredClone(chunk.events));
      return inner.write(items);
    },
  };
  return { store, written };
}

/** Key order too: JSON.stringify compares it, toStrictEqual alone would not. */
const asJson = (events: readonly LoggedEvent[]): string[] => events.map((event) => JSON.stringify(event));

describe('buffered entries', () => {
  it('writes exactly the events appended, in order, whatever the mix and wherever a write cuts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), fc.integer({ min: 1, max: 7 }), fc.boolean(), async (steps, maxWriteEvents, endFirst) => {
        const { store, written } = recordingStore();
        const persistence = createPersistence({ store, flushMs: 16, flushEvents: 3, maxWriteEvents, retentionMs: 1000, now: () => 1, emit: () => undefined });
        for (const id of TURNS) persistence.track(id, () => ({ conversationId: 'conv_1', status: 'streaming', createdAt: 1 }));
        await persistence.open();
        const appended = new Map<string, LoggedEvent[]>(TURNS.map((id) => [id, []]));
        const seqs = new Map<string, number>(TURNS.map((id) => [id, 0]));
        for (const { turn, kind, skip, text } of steps) {
          const seq = Math.max(1, seqs.get(turn)! + skip);
          seqs.set(turn, seq);
          const event = eventOf(kind, turn, seq, text);
          appended.get(turn)!.push(structuredClone(event));
          persistence.append(turn, event);
        }
        // An ended turn's rest goes out through its own path (writeRest), the other's through flush.
        if (endFirst) await persistence.end('turn_a', { status: 'complete', text: '', actions: [], parts: [], lastSeq: seqs.get('turn_a')! });
        await persistence.flush();
        for (const id of TURNS) {
          // A chunk is a run of consecutive seqs: the store is asked for every appended event, in order.
          expect(asJson(written.get(id)!)).toEqual(asJson(appended.get(id)!));
          expect(written.get(id)!).toStrictEqual(appended.get(id)!);
        }
      }),
      { numRuns: 400 },
    );
  });
});
