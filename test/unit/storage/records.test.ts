import { describe, expect, it } from 'vitest';
import { StorageError } from '../../../src/errors.js';
import { joinChunks } from '../../../src/storage/monotonic.js';
import { checkAll, chunkSchema, isEnded, outboxRecordSchema, turnRecordSchema } from '../../../src/storage/records.js';
import type { TurnRecord } from '../../../src/storage/store.js';

const delta = (seq: number, extra: Record<string, unknown> = {}) => ({ turnId: 't1', seq, type: 'delta', text: `w${seq}`, ...extra });

describe('stored record schemas', () => {
  it('accepts a folded row with actions and a stored error, and drops unknown keys', () => {
    const error = new StorageError('storage_quota_exceeded', 'full').toJSON();
    const checked = checkAll(
      turnRecordSchema,
      'turns',
      [
        {
          id: 't1',
          conversationId: 'c1',
          status: 'failed',
          lastSeq: 4,
          createdAt: 1,
          updatedAt: 2,
          endedAt: 3,
          text: 'hi',
          actions: [{ callId: 'a', name: 'search', status: 'completed', output: { hits: [1] }, seq: 3 }],
          error,
          token: 'Bearer secret',
        },
      ],
      'id',
    );
    expect(checked.skipped).toEqual([]);
    expect(checked.items[0]).not.toHaveProperty('token');
    expect(checked.items[0]?.error).toEqual(error);
  });

  it('rejects non-finite or negative times and seqs, and unknown statuses', () => {
    const base = { id: 't1', conversationId: 'c1', status: 'streaming', lastSeq: 0, createdAt: 1, updatedAt: 1 };
    expect(turnRecordSchema.safeParse(base).success).toBe(true);
    for (const bad of [{ updatedAt: Number.POSITIVE_INFINITY }, { createdAt: -1 }, { lastSeq: 1.5 }, { lastSeq: -1 }, { status: 'zombie' }]) {
      expect(turnRecordSchema.safeParse({ ...base, ...bad }).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it('keeps the user message of a turn (text or JSON object); rows without it still load; other values are refused', () => {
    const base = { id: 't1', conversationId: 'c1', status: 'complete', lastSeq: 2, createdAt: 1, updatedAt: 1, endedAt: 2, text: 'hi' };
    expect(turnRecordSchema.parse({ ...base, content: 'hello' }).content).toBe('hello');
    expect(turnRecordSchema.parse({ ...base, content: { text: 'hello', files: [1, 'a', null] } }).content).toEqual({ text: 'hello', files: [1, 'a', null] });
    expect(turnRecordSchema.parse(base)).not.toHaveProperty('content');
    for (const content of [42, null, ['a'], undefined]) {
      expect(turnRecordSchema.safeParse({ ...base, content }).success).toBe(false);
    }
  });

  it('lists the ended statuses', () => {
    const all = ['pending', 'streaming', 'reconnecting', 'stalled', 'recovering', 'complete', 'failed', 'cancelled'] as const;
    expect(all.filter(isEnded).sort()).toEqual(['cancelled', 'complete', 'failed']);
  });

  it('skips and names the store and (shortened) key of each corrupt record', () => {
    const good = { operationId: 'op_aaaaaaaaaaaaaaaa', conversationId: 'c1', content: 'hi', createdAt: 1, order: 1, attempts: 0, nextAttemptAt: 0, state: 'queued' };
    const checked = checkAll(outboxRecordSchema, 'outbox', [good, { operationId: 'x'.repeat(300) }], 'operationId');
    expect(checked.items).toEqual([good]);
    expect(checked.skipped).toHaveLength(1);
    expect(checked.skipped[0]?.code).toBe('storage_corrupt_record');
    expect(checked.skipped[0]?.details).toEqual({ store: 'outbox', key: `"${'x'.repeat(199)}` });
  });
});

describe('chunkSchema', () => {
  it('accepts consecutive events of its turn and drops unknown keys of the chunk', () => {
    const parsed = chunkSchema.safeParse({ turnId: 't1', firstSeq: 2, lastSeq: 3, events: [delta(2), delta(3)], extra: 1 });
    expect(parsed.data).toEqual({ turnId: 't1', firstSeq: 2, lastSeq: 3, events: [delta(2), delta(3)] });
  });

  it('validates non-delta events with the protocol schema', () => {
    const action = { turnId: 't1', seq: 1, type: 'action', callId: 'c', name: 'n', status: 'started' };
    expect(chunkSchema.safeParse({ turnId: 't1', firstSeq: 1, lastSeq: 1, events: [action] }).success).toBe(true);
    expect(chunkSchema.safeParse({ turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...action, status: 'exploded' }] }).success).toBe(false);
  });

  it('rejects wrong turn ids, gaps, miscounts and bad deltas', () => {
    const cases = [
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), turnId: 't2' }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 2, events: [delta(1), delta(3)] },
      { turnId: 't1', firstSeq: 1, lastSeq: 3, events: [delta(1), delta(2)] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), text: null }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), seq: 1.5 }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [null] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [] },
      { turnId: 'bad id!', firstSeq: 1, lastSeq: 1, events: [delta(1)] },
      'not a chunk',
    ];
    for (const value of cases) expect(chunkSchema.safeParse(value).success, JSON.stringify(value)).toBe(false);
  });
});

describe('joinChunks', () => {
  const record: TurnRecord = { id: 't1', conversationId: 'c1', status: 'streaming', lastSeq: 9, createdAt: 1, updatedAt: 1 };
  const chunk = (from: number, to: number) => ({ turnId: 't1', firstSeq: from, lastSeq: to, events: Array.from({ length: to - from + 1 }, (_, i) => delta(from + i)) });

  it('joins overlapping chunks taking each seq once; lastSeq is the last event loaded', () => {
    const loaded = joinChunks(record, [chunk(1, 3), chunk(2, 5)]);
    expect(loaded.events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(loaded.record.lastSeq).toBe(5);
    expect(loaded.skipped).toBeUndefined();
  });

  it('stops at a corrupt chunk or a hole and reports the chunk there', () => {
    for (const after of [{ ...chunk(4, 5), events: 'garbage' }, chunk(5, 6)]) {
      const loaded = joinChunks(record, [chunk(1, 3), after, chunk(7, 9)]);
      expect(loaded.events.map((event) => event.seq)).toEqual([1, 2, 3]);
      expect(loaded.record.lastSeq).toBe(3);
      expect(loaded.skipped?.map((error) => error.details)).toEqual([{ store: 'chunks', key: `["t1",${after.firstSeq}]` }]);
    }
  });

  it('returns a folded row as the whole turn', () => {
    const folded = { ...record, status: 'complete' as const, text: 'all', endedAt: 2 };
    expect(joinChunks(folded, [chunk(1, 3)])).toEqual({ record: folded, events: [] });
  });
});
